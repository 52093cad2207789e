/**
 * Every view of the web console in a real browser (test/console/browser.ts): axe-core finds
 * no serious or critical violation in light and dark, nothing scrolls sideways at phone
 * width, no view sends requests while idle, the keyboard moves focus locally; and the
 * screenshots of every view at 1280×800 and 390×844, light and dark.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { AXE, axeProblems, clippedControls, go, page, pageErrors, sentSince, server, SHOTS, signIn, start, stop } from './browser.js';

before(async () => {
  await start();
  // Something to show in every view.
  const put = async (method: string, p: string, body?: unknown): Promise<void> => {
    const r = await server.req(method, p, body);
    assert.ok(r.status === 200 || r.status === 201, `${method} ${p}: ${r.status} ${r.raw}`);
  };
  await put('PUT', '/tables/users');
  for (const row of [{ name: 'ann', age: 32, elsewhere: true }, { nick: 'b' }, { name: 'cy', age: 40, city: 'Oslo' }, { name: 'dan' }])
    await put('POST', '/tables/users/rows', { rows: row });
  await put('PUT', '/tables/twins');
  await put('PUT', '/records/shot', { record: { name: 'ann', tags: ['a', 'b'], address: { city: 'Oslo' } }, ttl: 3600 });
  await put('PUT', '/variants/ratio', '{"variant":2.0,"ttl":3600}');
  await put('PUT', '/variants/code', { variant: '43' });
  await put('PUT', '/variants/flag', { variant: false, ttl: 600 });
  await put('PUT', '/variants/hits', { variant: 15 });
  await put('PUT', '/locks/shot', { ttl: 600, holder: 'worker-1' });
  // A long item: on a phone it wraps rather than being cut.
  const long = { note: 'a long item that does not fit on one line of a phone, with more words than a 390 px screen holds', tags: ['one', 'two', 'three'] };
  await put('PUT', '/lists/queue', { list: ['job-1', { id: 2, retries: 0 }, 3.5, long], ttl: 3600 });
  await put('PUT', '/sets/big', { set: Array.from({ length: 60 }, (_, i) => `m${String(i).padStart(2, '0')}`) });
  await put('PUT', '/sets/warm', { set: ['m01', 'm02', 'orange'] });
  await put('PUT', '/zsets/scores', { zset: { ann: 30, bob: 12.5, cy: 20, dee: 41 }, ttl: 600 });
  await signIn();
});
after(stop);

/** Idle load per view: requests sent while the view was open and nothing happened, and for how long. */
const idle: Record<string, { requests: number; seconds: number }> = {};

/**
 * `scroll`: the card of this element is brought to the top of the window before each screenshot, for the
 * parts of a view below the first screen; `act`: what is done in the view before it is checked.
 */
const VIEWS: { name: string; hash: string; ready: string; scroll?: string; act?: () => Promise<void> }[] = [
  { name: 'dashboard', hash: '/', ready: '#chart-disk .u-axis' },
  { name: 'tables', hash: '/tables', ready: '#names' },
  { name: 'table', hash: '/tables/users', ready: '#grid' },
  { name: 'records', hash: '/records', ready: '#names, #names-empty' },
  { name: 'record', hash: '/records/shot', ready: '#record-ttl' },
  { name: 'variants', hash: '/variants', ready: '#names' },
  { name: 'variant', hash: '/variants/ratio', ready: '#variant-ttl' },
  { name: 'locks', hash: '/locks', ready: '#names' },
  { name: 'lock', hash: '/locks/shot', ready: '#lock-countdown' },
  { name: 'lists', hash: '/lists', ready: '#names' },
  { name: 'list', hash: '/lists/queue', ready: '#list-items' },
  { name: 'list-actions', hash: '/lists/queue', ready: '#object-ttl', scroll: '#version-title' },
  { name: 'list-edit', hash: '/lists/queue', ready: '#edit-title', scroll: '#move-title' },
  { name: 'list-danger', hash: '/lists/queue', ready: '#danger-title', scroll: '#danger-title' },
  { name: 'sets', hash: '/sets', ready: '#names' },
  { name: 'set', hash: '/sets/big', ready: '#set-members' },
  { name: 'set-actions', hash: '/sets/big', ready: '#object-ttl', scroll: '#version-title' },
  {
    name: 'set-combine',
    hash: '/sets/big',
    ready: '#combine-members',
    scroll: '#combine-title',
    act: async () => {
      await page.selectOption('#combine-op', 'inter');
      await page.fill('#combine-with', 'warm');
      await page.click('#combine');
    },
  },
  { name: 'zsets', hash: '/zsets', ready: '#names' },
  { name: 'zset', hash: '/zsets/scores', ready: '#zset-items' },
  { name: 'zset-actions', hash: '/zsets/scores', ready: '#object-ttl', scroll: '#version-title' },
  { name: 'feed', hash: '/feed', ready: '#feed-state:text("following")' },
  { name: 'txn', hash: '/txn', ready: '#txn-json' },
  {
    name: 'txn-collections',
    hash: '/txn',
    ready: '#txn-json',
    act: async () => {
      for (const t of ['list PUSH', 'zset INCR', 'check: list length', 'check: zset member score']) {
        await page.selectOption('#txn-template', t);
        await page.click('#txn-add');
      }
    },
  },
];

test('every view: axe-core finds no serious or critical violation (light and dark); no sideways scrolling at 390 px; screenshots', async () => {
  const problems: string[] = [];
  // One page load, then hash navigation (as a user moves): axe is injected once.
  await go('/');
  await page.evaluate(AXE);
  for (const v of VIEWS) {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.evaluate((h) => (location.hash = h), `#${v.hash}`);
    await v.act?.();
    await page.locator(v.ready).first().waitFor({ timeout: 15_000 });
    if (v.name === 'feed') assert.ok([200, 201].includes((await server.req('PUT', '/records/feed-shot', { record: { n: 1 } })).status));
    await page.waitForTimeout(v.name === 'dashboard' ? 600 : 150);
    // From here until the next view nothing happens on the page but axe and screenshots: its idle load.
    const t0 = Date.now();
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const [w, h] of [
        [1280, 800],
        [390, 844],
      ] as const) {
        await page.setViewportSize({ width: w, height: h });
        if (v.scroll) await page.locator(v.scroll).evaluate((e) => (e.closest('.card') ?? e).scrollIntoView({ block: 'start' }));
        await page.waitForTimeout(80);
        if (w === 390) {
          const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
          if (wide > 0) problems.push(`${v.name} (${scheme}): ${wide}px wider than a 390 px screen`);
          for (const c of await clippedControls()) problems.push(`${v.name} (${scheme}) at 390 px: ${c}`);
        } else {
          for (const f of await axeProblems()) problems.push(`${v.name} (${scheme}): ${f}`);
        }
        await page.screenshot({ path: path.join(SHOTS, `${v.name}-${w}-${scheme}.png`) });
      }
    }
    if (v.name !== 'dashboard') {
      idle[v.name] = { requests: sentSince(t0), seconds: (Date.now() - t0) / 1000 };
      if (idle[v.name]!.requests !== 0) problems.push(`${v.name}: ${idle[v.name]!.requests} requests while idle`);
    }
  }
  console.log(
    `idle load: ${Object.entries(idle)
      .map(([k, x]) => `${k} ${x.requests} in ${x.seconds.toFixed(1)} s`)
      .join(', ')}`,
  );
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
  for (const f of ['dashboard-1280-light', 'table-390-dark']) assert.ok(statSync(path.join(SHOTS, `${f}.png`)).size > 5000, `${f}.png is suspiciously small`);
  // The assertion's diff leaves lines out of a long list: every problem is printed whole first.
  for (const p of problems) console.log(`problem: ${p}`);
  assert.deepEqual(problems, []);
});

test('the sections on a phone: a menu button opens them all in a column, nothing clipped; Escape and a choice close it; wider, all in the bar', async () => {
  await go('/zsets');
  await page.setViewportSize({ width: 390, height: 844 });
  const links = page.locator('nav a');
  const count = await links.count();
  assert.equal(count, 10, 'the dashboard, seven kinds, the feed and transactions');
  assert.equal(await page.locator('nav a:visible').count(), 0, 'closed, the menu shows no section');
  assert.equal((await page.locator('#nav-toggle').textContent())?.trim(), 'Sections; now Sorted sets ▾');
  await page.click('#nav-toggle');
  assert.equal(await page.getAttribute('#nav-toggle', 'aria-expanded'), 'true');
  assert.equal(await page.locator('nav a:visible').count(), count, 'open, every section shows');
  const boxes = await links.evaluateAll((as) => as.map((a) => a.getBoundingClientRect().toJSON() as { left: number; right: number; top: number }));
  for (const [i, b] of boxes.entries()) {
    assert.ok(b.left >= 0 && b.right <= 390, `section ${i} spans x ${b.left}–${b.right}`);
    if (i > 0) assert.ok(b.top > boxes[i - 1]!.top, 'one section under the other');
  }
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.waitForTimeout(80);
    assert.deepEqual(await clippedControls(), [], `menu (${scheme})`);
    await page.evaluate(AXE);
    assert.deepEqual(await axeProblems(), [], `menu (${scheme})`);
    await page.screenshot({ path: path.join(SHOTS, `menu-390-${scheme}.png`) });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('nav a:visible').count(), 0, 'Escape closes the menu');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'nav-toggle');
  await page.click('#nav-toggle');
  await page.click('nav a:text-is("Tables")');
  await page.waitForURL(/#\/tables$/);
  assert.equal(await page.locator('nav a:visible').count(), 0, 'choosing a section closes the menu');
  assert.equal((await page.locator('#nav-toggle').textContent())?.trim(), 'Sections; now Tables ▾');

  await page.setViewportSize({ width: 1280, height: 800 });
  assert.equal(await page.locator('#nav-toggle:visible').count(), 0, 'no menu button on a wide screen');
  assert.equal(await page.locator('nav a:visible').count(), count, 'every section in the bar');
  assert.deepEqual(await clippedControls(), []);
});

test('keyboard: focus stays local after navigating; sign out forgets the token; no script errors', async () => {
  await go('/tables');
  await page.locator('body').press('3');
  await page.waitForURL(/#\/records$/);
  // Focus moves to the new view's heading, not to the whole page.
  await page.waitForFunction(() => document.activeElement?.tagName === 'H1');
  // The view's form may come a moment after its heading: Tab once it is there.
  await page.locator('#open-name').waitFor();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'open-name');
  assert.deepEqual(pageErrors, [], 'no script errors on the page');
  await page.click('#signout');
  await page.locator('#token').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('pithos-console-token')), null);
  assert.equal(await page.locator('nav').count(), 0);

  // The sign-in view, as the others: axe and screenshots. First, axe can fail: an empty button is critical.
  await page.evaluate(AXE);
  await page.evaluate(() => document.body.append(Object.assign(document.createElement('button'), { id: 'axe-probe' })));
  assert.ok(
    (await axeProblems()).some((p) => p.startsWith('button-name')),
    'axe reports an unnamed button',
  );
  await page.evaluate(() => document.getElementById('axe-probe')?.remove());
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    assert.deepEqual(await axeProblems(), [], `sign-in (${scheme})`);
    for (const [w, h] of [
      [1280, 800],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width: w, height: h });
      await page.waitForTimeout(80);
      await page.screenshot({ path: path.join(SHOTS, `signin-${w}-${scheme}.png`) });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
});
