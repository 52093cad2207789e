/**
 * The web console in a real browser: Debian's Chromium (/usr/bin/chromium, never a
 * downloaded one) driven by playwright-core, against a real Pithos process. Every step
 * is checked twice: on the page, and on the server through the HTTP API.
 *
 * Screenshots are taken on every run (into a temporary directory); with
 * PITHOS_SCREENSHOTS=1 they are written to docs/console/, which docs/console.md shows.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PithosServer, ROOT } from '../helpers/server.js';

const CHROMIUM = process.env.PITHOS_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = process.env.PITHOS_SCREENSHOTS === '1' ? path.join(ROOT, 'docs', 'console') : mkdtempSync(path.join(os.tmpdir(), 'pithos-shots-'));

let server: PithosServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`);
  mkdirSync(SHOTS, { recursive: true });
  server = await PithosServer.start();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (4\d\d)/.test(m.text())) pageErrors.push(m.text());
  });
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (process.env.PITHOS_SCREENSHOTS !== '1') rmSync(SHOTS, { recursive: true, force: true });
});

async function shot(name: string): Promise<void> {
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file });
  assert.ok(statSync(file).size > 5000, `${name}.png is suspiciously small`);
}

/** Clicks Confirm (or Cancel) in the confirmation dialog, after checking its text. */
async function answerDialog(expect: RegExp, ok: boolean): Promise<void> {
  const dlg = page.locator('#confirm');
  await dlg.waitFor({ state: 'visible' });
  assert.match((await page.locator('#confirm-text').textContent()) ?? '', expect);
  await page.click(ok ? '#confirm-ok' : '#confirm-cancel');
  await dlg.waitFor({ state: 'hidden' });
}

test('console: loads without a token, signs in, dashboard shows /health', async () => {
  const res = await page.goto(`${server.base}/console`);
  assert.equal(res?.status(), 200);
  assert.equal(page.url(), `${server.base}/console/`, 'redirected to the trailing slash');
  await page.locator('#token').waitFor();

  // A wrong token is refused and nothing is stored.
  await page.fill('#token', 'wrong');
  await page.press('#token', 'Enter');
  await page.locator('#status .error').filter({ hasText: '401' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);

  await page.fill('#token', server.token);
  await page.click('button[type=submit]');
  await page.locator('[data-figure="key_count"]').waitFor();
  assert.equal(await page.locator('[data-figure="key_count"]').textContent(), '0');
  assert.match((await page.locator('[data-figure="disk_total"]').textContent()) ?? '', /^\d+\.\d\dGB$/);
  // The token lives in sessionStorage only.
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('pithos-console-token')), server.token);
  // /metrics: a chart when the server has it, else a note saying so.
  const metrics = await server.req('GET', '/metrics');
  if (metrics.status === 404) await page.locator('#metrics-note').filter({ hasText: '/metrics' }).waitFor();
  else assert.equal(await page.locator('#metrics-note').count(), 0);
  await page.waitForTimeout(2300); // a second health sample for the disk chart
  await shot('dashboard');
});

test('console: create a table, insert rows, query with the builder', async () => {
  // Keyboard: "2" goes to Tables.
  await page.locator('body').press('2');
  await page.waitForURL(/#\/tables$/);
  const listing = await server.req('GET', '/tables');
  if (listing.status === 404 || listing.status === 405) await page.locator('.note').filter({ hasText: 'does not offer listing' }).waitFor();
  else await page.locator('#names').or(page.getByText('Nothing here.')).first().waitFor();

  await page.fill('#new-table', 'users');
  await page.click('text=Create table');
  await page.waitForURL(/#\/tables\/users$/);
  await page.locator('#no-rows').waitFor();
  assert.equal((await server.req('GET', '/tables/users')).status, 200, 'the table exists on the server');

  const rows = [{ name: 'ann', age: 31 }, { name: 'bob', age: 25 }, { name: 'cy', age: 40, city: 'Oslo' }];
  for (const [i, row] of rows.entries()) {
    await page.fill('#insert-json', JSON.stringify(row));
    await page.click('#insert-row');
    await page.locator('#status .ok').filter({ hasText: `row inserted, t_id ${i + 1}` }).waitFor();
  }
  await page.locator('#grid tbody tr').nth(2).waitFor();
  assert.equal(await page.locator('#grid tbody tr').count(), 3);
  assert.deepEqual((await server.req('GET', '/tables/users')).body.data, {
    1: { name: 'ann', age: 31 }, 2: { name: 'bob', age: 25 }, 3: { name: 'cy', age: 40, city: 'Oslo' },
  });

  // $or is offered only where the server understands it (docs/query.md).
  const orProbe = await server.req('POST', '/tables/users/query', { wheres: { $or: [{}] } });
  const orSupported = orProbe.status === 200 && orProbe.body.data.length === 3;
  await page.waitForFunction((want) => {
    const o = document.querySelector<HTMLOptionElement>('#combinator option[value=or]');
    return o !== null && o.disabled === !want && (document.querySelector('#or-note') as HTMLElement).hidden === want;
  }, orSupported);

  // age ≥ 30, newest first.
  await page.click('#add-condition');
  await page.fill('.cond-field', 'age');
  await page.selectOption('.cond-op', '$gte');
  await page.fill('.cond-value', '30');
  assert.deepEqual(JSON.parse(await page.inputValue('#wheres')), { age: { $gte: 30 } });
  await page.fill('#order-field', 'age');
  await page.selectOption('#order-dir', 'desc');
  await page.click('#run-query');
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 2);
  // Matching rows are shown with their t_ids, which Edit and Delete act on.
  assert.deepEqual(await page.locator('#grid tbody tr td.t-id').allTextContents(), ['3', '1']);
  const names = await page.locator('#grid tbody tr td:nth-child(2)').allTextContents();
  assert.deepEqual(names, ['cy', 'ann']);
  assert.match((await page.locator('#page-info').textContent()) ?? '', /2 rows/);
  await shot('table');
});

test('console: edit and delete rows, with confirmation', async () => {
  // Edit ann: age 31 → 32 (shown second: cy first, ordered by age desc).
  await page.locator('#grid tbody tr').filter({ hasText: 'ann' }).locator('.edit-row').click();
  await page.locator('#row-json').waitFor();
  const text = JSON.parse(await page.inputValue('#row-json'));
  assert.deepEqual(text, { name: 'ann', age: 31 });
  await page.fill('#row-json', JSON.stringify({ name: 'ann', age: 32, role: 'admin' }));
  await page.click('#save-row');
  await answerDialog(/^Patch row 1 of 'users': set \{"age":32,"role":"admin"\}\?$/, true);
  await page.locator('#status .ok').filter({ hasText: 'row 1 patched' }).waitFor();
  assert.deepEqual((await server.req('GET', '/tables/users')).body.data['1'], { name: 'ann', age: 32, role: 'admin' });

  // A field deleted in the editor is removed from the row (unset), not left behind.
  await page.locator('#grid tbody tr').filter({ hasText: 'ann' }).locator('.edit-row').click();
  await page.waitForFunction(() => (document.querySelector<HTMLTextAreaElement>('#row-json')?.value ?? '').includes('admin'));
  await page.fill('#row-json', JSON.stringify({ name: 'ann', age: 32 }));
  await page.click('#save-row');
  await answerDialog(/^Patch row 1 of 'users': remove role\?$/, true);
  await page.locator('#status .ok').filter({ hasText: 'row 1 patched' }).waitFor();
  assert.deepEqual((await server.req('GET', '/tables/users')).body.data['1'], { name: 'ann', age: 32 });

  // A row changed by someone else after the editor opened is not overwritten: the save is refused (412).
  await page.locator('#grid tbody tr').filter({ hasText: 'ann' }).locator('.edit-row').click();
  await page.waitForFunction(() => !(document.querySelector<HTMLTextAreaElement>('#row-json')?.value ?? 'admin').includes('admin'));
  assert.equal((await server.req('PATCH', '/tables/users/rows/1', { sets: { elsewhere: true } })).status, 200);
  await page.fill('#row-json', JSON.stringify({ name: 'ann', age: 33 }));
  await page.click('#save-row');
  await answerDialog(/^Patch row 1 of 'users': set \{"age":33\}\?$/, true);
  await page.locator('#status .error').filter({ hasText: /row 1 of table 'users' changed \(version \d+\)/ }).waitFor();
  assert.deepEqual((await server.req('GET', '/tables/users')).body.data['1'], { name: 'ann', age: 32, elsewhere: true });

  // Delete cy: cancel first (nothing happens), then confirm.
  const cy = page.locator('#grid tbody tr').filter({ hasText: 'cy' });
  await cy.locator('.delete-row').click();
  await answerDialog(/^Delete row 3 \(\{"name":"cy","age":40,"city":"Oslo"\}\) from 'users'\?$/, false);
  assert.ok((await server.req('GET', '/tables/users')).body.data['3'], 'cancel left the row alone');
  await cy.locator('.delete-row').click();
  await answerDialog(/^Delete row 3 /, true);
  await page.locator('#status .ok').filter({ hasText: 'row 3 deleted' }).waitFor();
  assert.deepEqual(Object.keys((await server.req('GET', '/tables/users')).body.data), ['1', '2']);
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 1);

  // The table list counts rows in English: 1 row, 2 rows.
  if ((await server.req('GET', '/tables')).status === 200) {
    assert.equal((await server.req('PUT', '/tables/solo')).status, 201);
    assert.equal((await server.req('POST', '/tables/solo/rows', { rows: { x: 1 } })).status, 201);
    await page.goto(`${server.base}/console/#/tables`);
    const counted = async (name: string): Promise<string | null> => page.locator('#names li').filter({ hasText: name }).locator('.muted').textContent();
    await page.locator('#names li').filter({ hasText: 'solo' }).waitFor();
    assert.equal(await counted('solo'), '1 row');
    assert.equal(await counted('users'), '2 rows');
  }
});

test('console: Delete removes exactly the row clicked, not the rows equal to it', async () => {
  assert.equal((await server.req('PUT', '/tables/twins')).status, 201);
  for (let i = 0; i < 3; i++) assert.equal((await server.req('POST', '/tables/twins/rows', { rows: { same: 'x' } })).status, 201);
  await page.goto(`${server.base}/console/#/tables/twins`);
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 3);
  await page.locator('#grid tbody tr[data-t-id="2"] .delete-row').click();
  await answerDialog(/^Delete row 2 \(\{"same":"x"\}\) from 'twins'\?$/, true);
  await page.locator('#status .ok').filter({ hasText: 'row 2 deleted' }).waitFor();
  // What the server holds: the two other identical rows are still there.
  assert.deepEqual((await server.req('GET', '/tables/twins')).body.data, { 1: { same: 'x' }, 3: { same: 'x' } });
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 2);
  assert.deepEqual(await page.locator('#grid tbody tr td.t-id').allTextContents(), ['1', '3']);

  // Edit of one of two identical rows changes that row only.
  await page.locator('#grid tbody tr[data-t-id="3"] .edit-row').click();
  await page.locator('#row-json').waitFor();
  await page.fill('#row-json', JSON.stringify({ same: 'y' }));
  await page.click('#save-row');
  await answerDialog(/^Patch row 3 of 'twins': set \{"same":"y"\}\?$/, true);
  await page.locator('#status .ok').filter({ hasText: 'row 3 patched' }).waitFor();
  assert.deepEqual((await server.req('GET', '/tables/twins')).body.data, { 1: { same: 'x' }, 3: { same: 'y' } });
});

test('console: record editor saves JSON; variant increments; lock shows its holder', async () => {
  assert.equal((await server.req('PUT', '/records/doc', { record: { a: 1 } })).status, 201);
  await page.locator('body').press('3');
  await page.waitForURL(/#\/records$/);
  await page.fill('#open-name', 'doc');
  await page.press('#open-name', 'Enter');
  await page.waitForURL(/#\/records\/doc$/);
  await page.waitForFunction(() => (document.querySelector('#record-json') as HTMLTextAreaElement | null)?.value.includes('"a"'));
  assert.deepEqual(JSON.parse(await page.inputValue('#record-json')), { a: 1 });
  await page.fill('#record-json', '{"a": 2, "tags": ["x", "y"]}');
  await page.press('#record-json', 'Control+Enter');
  await page.locator('#status .ok').filter({ hasText: "record 'doc' saved" }).waitFor();
  assert.deepEqual((await server.req('GET', '/records/doc')).body.data, { a: 2, tags: ['x', 'y'] });
  // Invalid JSON is refused in the page; the server copy stays.
  await page.fill('#record-json', '{"a": ');
  await page.click('#save-record');
  await page.locator('#status .error').filter({ hasText: 'not valid JSON' }).waitFor();
  assert.deepEqual((await server.req('GET', '/records/doc')).body.data, { a: 2, tags: ['x', 'y'] });
  await page.click('#reload-record');
  await page.waitForFunction(() => (document.querySelector('#record-json') as HTMLTextAreaElement).value.includes('tags'));
  await shot('record');

  assert.equal((await server.req('PUT', '/variants/counter', { variant: 5 })).status, 201);
  await page.goto(`${server.base}/console/#/variants/counter`); // a reload: still signed in (sessionStorage)
  await page.locator('#variant-value', { hasText: '5' }).waitFor();
  await page.fill('#delta', '3');
  await page.click('#incr');
  await page.locator('#variant-value', { hasText: '8' }).waitFor();
  assert.equal((await server.req('GET', '/variants/counter')).body.data.variant, 8);

  assert.equal((await server.req('PUT', '/locks/jobs', { ttl: 30, holder: 'worker-1' })).status, 201);
  await page.goto(`${server.base}/console/#/locks/jobs`);
  await page.locator('#lock-holder-name', { hasText: 'worker-1' }).waitFor();
  await page.waitForFunction(() => /^\d+\.\d s$/.test(document.querySelector('#lock-countdown')?.textContent ?? ''));
  const left = parseFloat((await page.locator('#lock-countdown').textContent()) ?? '');
  assert.ok(left > 20 && left <= 30, `countdown ${left}`);
  await shot('lock');
});

test('console: transaction composer; sign out forgets the token', async () => {
  await page.locator('body').press('6');
  await page.waitForURL(/#\/txn$/);
  await page.selectOption('#txn-template', 'table INSERT');
  await page.click('#txn-add');
  const t = JSON.parse(await page.inputValue('#txn-json'));
  assert.equal(t.mutations.length, 1);
  assert.equal(t.mutations[0].operation, 'INSERT');
  await page.click('#txn-run');
  const probe = await server.req('POST', '/txns', { mutations: [] });
  if (probe.status === 404 || probe.status === 405) {
    await page.locator('#txn-result .note').filter({ hasText: 'does not offer transactions' }).waitFor();
  } else {
    await page.locator('#txn-result pre').waitFor();
    assert.equal(Object.keys((await server.req('GET', '/tables/users')).body.data).length, 3);
  }
  await shot('txn');
  assert.deepEqual(pageErrors, [], 'no script errors on the page');

  await page.click('#signout');
  await page.locator('#token').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
});
