/**
 * The web console in a real browser (test/console/browser.ts): for every kind, create, read,
 * edit and delete through the page, and check what the server then holds over HTTP, not
 * only what the page shows. views.test.ts checks every view with axe-core and takes the
 * screenshots.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { answerDialog, data, err, go, ok, page, pageErrors, queries, sentSince, server, start, stop } from './browser.js';

before(start);
after(stop);

/** What the server says is left of an object's lifetime, in ms (null: it never expires), from its listing. */
async function lifeLeft(kind: 'records' | 'variants' | 'lists' | 'sets' | 'zsets', name: string): Promise<number | null> {
  const items = ((await data(`/${kind}?prefix=${encodeURIComponent(name)}&limit=1`)) as { items: Array<{ name: string; ttl_ms: number | null }> }).items;
  assert.equal(items[0]?.name, name, `${kind} listing: ${JSON.stringify(items)}`);
  return items[0]!.ttl_ms;
}

/** The version the server holds for an object now (its GET's ETag). */
async function versionOf(p: string): Promise<number> {
  const r = await server.req('GET', p);
  assert.equal(r.status, 200, `GET ${p}: ${r.status} ${r.raw}`);
  const v = Number(/^"(\d+)"$/.exec(String(r.headers.etag))?.[1]);
  assert.ok(Number.isInteger(v), `GET ${p}: ETag ${String(r.headers.etag)}`);
  return v;
}

/**
 * The lifetime card of a list, set or sorted set: a new ttl set through the page is what the
 * listing then says is left, 0 makes it permanent again, and a bad one is refused in the page.
 */
async function lifetimeCard(kind: 'lists' | 'sets' | 'zsets', name: string): Promise<void> {
  await page.locator('#object-ttl', { hasText: 'never expires' }).waitFor();
  await page.fill('#new-ttl', '600');
  await page.click('#set-ttl');
  await ok('#ttl-status', `'${name}' now expires in 10 min 00 s`);
  const left = await lifeLeft(kind, name);
  assert.ok(left !== null && left > 590_000 && left <= 600_000, `${left} ms left after setting 600 s`);
  await page.locator('#object-ttl', { hasText: /^expires in (9|10) min \d\d s$/ }).waitFor();
  await page.fill('#new-ttl', '0');
  await page.click('#set-ttl');
  await ok('#ttl-status', `'${name}' no longer expires`);
  assert.equal(await lifeLeft(kind, name), null);
  await page.locator('#object-ttl', { hasText: 'never expires' }).waitFor();
  await page.fill('#new-ttl', '1.5');
  await page.click('#set-ttl');
  await err('#ttl-status', 'the lifetime is whole seconds');
}

/** Waits until the page shows the version the server holds for the object. */
async function versionShown(p: string): Promise<void> {
  const v = await versionOf(p);
  await page.locator('#object-version', { hasText: new RegExp(`^${v}$`) }).waitFor();
}

/** Turns on "only if unchanged" once the page shows the version the server holds. */
async function guardOn(p: string): Promise<void> {
  await versionShown(p);
  await page.check('#if-match');
}

test('sign in: no navigation before it, a wrong token refused, the token kept in sessionStorage only; no 401 for the favicon', async () => {
  const res = await page.goto(`${server.base}/console`);
  assert.equal(res?.status(), 200);
  assert.equal(page.url(), `${server.base}/console/`, 'redirected to the trailing slash');
  await page.locator('#token').waitFor();
  assert.equal(await page.locator('nav').count(), 0, 'no navigation on the sign-in screen');
  assert.equal(await page.locator('#signout').count(), 0, 'no Sign out on the sign-in screen');

  await page.fill('#token', 'wrong');
  await page.press('#token', 'Enter');
  await page.locator('#signin-error').filter({ hasText: '401' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);

  await page.fill('#token', server.token);
  await page.click('button[type=submit]');
  await page.locator('[data-figure="key_count"]').waitFor();
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('pithos-console-token')), server.token);

  const fav = await server.req('GET', '/favicon.ico', undefined, { 'Auth-Token': null });
  assert.equal(fav.status, 204);
  const icon = await server.req('GET', '/console/favicon.svg', undefined, { 'Auth-Token': null });
  assert.equal(icon.status, 200);
  assert.equal(icon.headers['content-type'], 'image/svg+xml');
});

test('dashboard: health in words and units; charts with axes; the request rate leaves out the console', async () => {
  await go('/');
  await page.locator('[data-figure="gc_state"]').waitFor();
  const t0 = Date.now();
  const n0 = sentSince(0);
  assert.match((await page.locator('[data-figure="gc_state"]').textContent()) ?? '', /^garbage collector (not run yet|compacting|idle)$/);
  assert.match((await page.locator('[data-figure="disk_used"]').textContent()) ?? '', /^\d+(\.\d+)? (B|KiB|MiB|GiB|TiB)$/);
  assert.match((await page.locator('[data-figure="live_data"]').textContent()) ?? '', /^\d+(\.\d+)? (B|KiB|MiB|GiB)$/);
  // uPlot draws the axes: tick labels with units, and a time axis.
  await page.locator('#chart-disk .u-axis').first().waitFor();
  // The disk's value axis: 3 to 5 round ticks from 0 to just above what is used, not the disk's size.
  await page.locator('#chart-disk[data-ticks]').waitFor();
  const diskTicks = ((await page.locator('#chart-disk').getAttribute('data-ticks')) ?? '').split(' | ');
  assert.ok(diskTicks.length >= 3 && diskTicks.length <= 5, `disk ticks: ${diskTicks.join(', ')}`);
  assert.equal(diskTicks[0], '0');
  const sizes = diskTicks.slice(1).map((t) => /^(\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB)$/.exec(t));
  assert.ok(
    sizes.every((m) => m !== null && m[2] === sizes[0]![2]),
    `disk ticks in one unit: ${diskTicks.join(', ')}`,
  );
  const inBytes = (t: string): number => {
    const [n, u] = t.split(' ');
    return Number(n) * 1024 ** ['B', 'KiB', 'MiB', 'GiB', 'TiB'].indexOf(u!);
  };
  const used = inBytes((await page.locator('[data-figure="disk_used"]').textContent()) ?? '');
  const top = inBytes(diskTicks.at(-1)!);
  assert.ok(top >= used * 0.99 && top < used * 2, `the top tick ${diskTicks.at(-1)} is just above the ${used} bytes used`);
  assert.equal(await page.locator('#chart-rate canvas').count(), 1);

  // Every console request carries the header the server counts apart.
  const before = await server.req('GET', '/metrics');
  const consoleCount = (t: string): number => Number(/^pithos_http_console_requests_total (\d+)$/m.exec(t)?.[1]);
  // Load that is not the console's: 40 requests from here, then two samples apart.
  await page.locator('#chart-rate [data-last]').filter({ hasText: '/s' }).waitFor({ timeout: 15_000 });
  for (let i = 0; i < 40; i++) await server.req('GET', '/health');
  await page.waitForFunction(() => parseFloat(document.querySelector('#chart-rate [data-last]')?.textContent ?? '0') >= 2, undefined, { timeout: 15_000 });
  const afterM = await server.req('GET', '/metrics');
  assert.ok(consoleCount(afterM.raw) > consoleCount(before.raw), "the console's own requests are counted apart");
  // While idle the chart shows less than one request a second, although the console itself polls.
  await page.waitForFunction(() => parseFloat(document.querySelector('#chart-rate [data-last]')?.textContent ?? '9') < 1, undefined, { timeout: 15_000 });
  // The dashboard's own load: /health and /metrics every 5 s.
  const seconds = (Date.now() - t0) / 1000;
  const requests = sentSince(0) - n0;
  console.log(`idle load: dashboard ${requests} requests in ${seconds.toFixed(1)} s`);
  assert.ok(seconds > 9 && requests / seconds <= 0.5, `${requests} requests in ${seconds} s`);
});

test('tables: create, insert, query with the builder, server-side order and paging', async () => {
  await page.locator('body').press('2');
  await page.waitForURL(/#\/tables$/);
  await page.fill('#new-name', 'users');
  await page.click('#create');
  await page.waitForURL(/#\/tables\/users$/);
  await page.locator('#grid-empty').waitFor();
  assert.deepEqual(await data('/tables/users'), {});

  const rows = [
    { name: 'ann', age: 31 },
    { name: 'bob', age: 25 },
    { name: 'cy', age: 40, city: 'Oslo' },
  ];
  for (const [i, row] of rows.entries()) {
    await page.fill('#insert-json', JSON.stringify(row));
    await page.click('#insert-row');
    await ok('#insert-status', `row inserted, t_id ${i + 1}`);
  }
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 3);
  assert.deepEqual(await data('/tables/users'), { 1: rows[0], 2: rows[1], 3: rows[2] });

  // age ≥ 30, oldest first: ordered by the server.
  await page.click('#add-condition');
  await page.fill('.cond-field', 'age');
  await page.selectOption('.cond-op', '$gte');
  await page.fill('.cond-value', '30');
  assert.deepEqual(JSON.parse(await page.inputValue('#wheres')), { age: { $gte: 30 } });
  await page.fill('#order-field', 'age');
  await page.selectOption('#order-dir', 'desc');
  queries.length = 0;
  await page.click('#run-query');
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 2);
  assert.deepEqual(await page.locator('#grid tbody .t-id').allTextContents(), ['3', '1']);
  assert.ok(
    queries.some((q) => JSON.stringify(q.order) === '[{"field":"age","dir":"desc"}]' && typeof q.limit === 'number'),
    JSON.stringify(queries),
  );
  // The count of matching rows is a request of its own: it may come after the rows.
  await page.locator('#page-info', { hasText: /2 rows match/ }).waitFor();

  // 60 rows in another table: pages of 25 come from the server (limit, after), never the whole table.
  assert.equal((await server.req('PUT', '/tables/many')).status, 201);
  for (let i = 0; i < 60; i++) assert.equal((await server.req('POST', '/tables/many/rows', { rows: { n: i } })).status, 201);
  queries.length = 0;
  await go('/tables/many');
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 25);
  await page.click('#pager >> text=Next →');
  await page.waitForFunction(() => document.querySelector('#grid tbody .t-id')?.textContent === '26');
  await page.click('#pager >> text=Next →');
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 10);
  await page.locator('#page-info', { hasText: /page 3 · 60 rows match/ }).waitFor();
  const reads = queries.filter((q) => q.count !== true);
  assert.ok(reads.length >= 3);
  for (const q of reads) assert.equal(q.limit, 26, `every page read is limited: ${JSON.stringify(q)}`);
  assert.deepEqual(
    reads.map((q) => q.after),
    [0, 25, 50],
  );
});

test('rows by t_id: edit with field removal, replace, delete exactly one; a concurrent change is refused', async () => {
  await go('/tables/users');
  const edit = async (id: number): Promise<void> => {
    await page.click(`#grid tbody tr[data-t-id="${id}"] .edit-row`);
    await page.waitForFunction(() => (document.querySelector<HTMLTextAreaElement>('#row-json')?.value ?? '') !== '');
  };
  await edit(1);
  assert.deepEqual(JSON.parse(await page.inputValue('#row-json')), { name: 'ann', age: 31 });
  await page.fill('#row-json', JSON.stringify({ name: 'ann', age: 32, role: 'admin' }));
  await page.click('#save-row');
  await answerDialog(/^Patch row 1 of 'users': set \{"age":32,"role":"admin"\}\?$/, true);
  await ok('#row-action-status', 'row 1 patched');
  assert.deepEqual(await data('/tables/users/rows/1'), { name: 'ann', age: 32, role: 'admin' });

  // A field deleted in the editor is removed from the row (unset).
  await edit(1);
  await page.fill('#row-json', JSON.stringify({ name: 'ann', age: 32 }));
  await page.click('#save-row');
  await answerDialog(/^Patch row 1 of 'users': remove role\?$/, true);
  await ok('#row-action-status', 'row 1 patched');
  assert.deepEqual(await data('/tables/users/rows/1'), { name: 'ann', age: 32 });

  // Replace makes the text the whole row.
  await edit(2);
  await page.fill('#row-json', JSON.stringify({ nick: 'b' }));
  await page.click('#replace-row');
  await answerDialog(/^Replace row 2 of 'users' with \{"nick":"b"\}\?$/, true);
  await ok('#row-action-status', 'row 2 replaced');
  assert.deepEqual(await data('/tables/users/rows/2'), { nick: 'b' });

  // Changed by someone else after the editor opened: 412, shown next to the editor, nothing overwritten.
  await edit(1);
  assert.equal((await server.req('PATCH', '/tables/users/rows/1', { sets: { elsewhere: true } })).status, 200);
  await page.fill('#row-json', JSON.stringify({ name: 'ann', age: 33 }));
  await page.click('#save-row');
  await answerDialog(/^Patch row 1 of 'users': set \{"age":33\}\?$/, true);
  await err('#row-editor-status', /^412: .*row 1 of table 'users' changed/);
  assert.deepEqual(await data('/tables/users/rows/1'), { name: 'ann', age: 32, elsewhere: true });
  await page.click('#row-editor >> text=Cancel');

  // Three identical rows: Delete removes exactly the one clicked.
  assert.equal((await server.req('PUT', '/tables/twins')).status, 201);
  for (let i = 0; i < 3; i++) assert.equal((await server.req('POST', '/tables/twins/rows', { rows: { same: 'x' } })).status, 201);
  await go('/tables/twins');
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 3);
  await page.click('#grid tbody tr[data-t-id="2"] .delete-row');
  await answerDialog(/^Delete row 2 \(\{"same":"x"\}\) from 'twins'\?$/, false);
  assert.equal(Object.keys((await data('/tables/twins')) as object).length, 3, 'cancel left the row alone');
  await page.click('#grid tbody tr[data-t-id="2"] .delete-row');
  await answerDialog(/^Delete row 2 /, true);
  await ok('#row-action-status', 'row 2 deleted');
  assert.deepEqual(await data('/tables/twins'), { 1: { same: 'x' }, 3: { same: 'x' } });
  await page.waitForFunction(() => document.querySelectorAll('#grid tbody tr').length === 2);

  // A server error is shown next to the action that caused it.
  await page.fill('#insert-json', '[1]');
  await page.click('#insert-row');
  await err('#insert-status', 'must be a JSON object');

  // Dropping the table is in the Danger card, apart from the bulk patch and delete; cancel keeps it.
  assert.equal(await page.locator('#bulk-title').locator('xpath=ancestor::form[1]').locator('#drop-table').count(), 0);
  await page.click('.danger-zone #drop-table');
  await answerDialog(/^Drop table 'twins' with all its rows\?$/, false);
  assert.equal((await server.req('GET', '/tables/twins')).status, 200);
  await page.click('#drop-table');
  await answerDialog(/^Drop table 'twins' with all its rows\?$/, true);
  await page.waitForURL(/#\/tables$/);
  assert.equal((await server.req('GET', '/tables/twins')).status, 404);
});

test('records: New, edit with If-Match (a concurrent change refused), invalid JSON kept in the page, delete', async () => {
  await go('/records');
  await page.fill('#new-name', 'doc');
  await page.click('#create');
  await page.waitForURL(/#\/records\/doc$/);
  await page.locator('#record-info').filter({ hasText: 'saving creates it' }).waitFor();
  await page.fill('#record-json', '{"a": 1}');
  await page.click('#save-record');
  await ok('#record-status', "record 'doc' created");
  assert.deepEqual(await data('/records/doc'), { a: 1 });

  await page.fill('#record-json', '{"a": 2, "tags": ["x", "y"]}');
  await page.press('#record-json', 'Control+Enter');
  await ok('#record-status', "record 'doc' saved");
  assert.deepEqual(await data('/records/doc'), { a: 2, tags: ['x', 'y'] });
  assert.equal(await lifeLeft('records', 'doc'), null, 'a record without ttl gained one');

  // A save keeps the record's lifetime: what is left of it (a PUT without ttl made it permanent).
  assert.equal((await server.req('PATCH', '/records/doc', { ttl: 600 })).status, 200);
  await server.advance(100_000);
  await page.click('#reload-record');
  await page
    .locator('#record-ttl')
    .filter({ hasText: /^It expires in [78] min \d\d s \(as read\); saving keeps/ })
    .waitFor();
  await page.fill('#record-json', '{"a": 2, "tags": ["x", "y", "z"]}');
  await page.click('#save-record');
  await ok('#record-status', "record 'doc' saved");
  assert.deepEqual(await data('/records/doc'), { a: 2, tags: ['x', 'y', 'z'] });
  const left = await lifeLeft('records', 'doc');
  assert.ok(left !== null && left > 400_000 && left <= 500_000, `after the save ${left} ms are left; 500 s (600 - 100) were`);

  assert.equal((await server.req('PUT', '/records/doc', { record: { by: 'someone else' } })).status, 200);
  await page.fill('#record-json', '{"a": 3}');
  await page.click('#save-record');
  await err('#record-status', /^412: /);
  assert.deepEqual(await data('/records/doc'), { by: 'someone else' });

  await page.fill('#record-json', '{"a": ');
  await page.locator('#record-json-check').filter({ hasText: 'Not valid JSON' }).waitFor();
  await page.click('#save-record');
  await err('#record-status', 'not valid JSON');
  assert.deepEqual(await data('/records/doc'), { by: 'someone else' });

  await page.click('#reload-record');
  await page.waitForFunction(() => (document.querySelector<HTMLTextAreaElement>('#record-json')?.value ?? '').includes('someone else'));
  await page.click('#delete-record');
  await answerDialog(/^Delete record 'doc'\?$/, true);
  await page.waitForURL(/#\/records$/);
  assert.equal((await server.req('GET', '/records/doc')).status, 404);
});

test('variants: the list shows type, value, version and ttl; editing keeps the type (1.0 stays a double, "42" a string)', async () => {
  assert.equal((await server.req('PUT', '/variants/ratio', '{"variant":1.0}')).status, 201);
  assert.equal((await server.req('PUT', '/variants/code', { variant: '42' })).status, 201);
  assert.equal((await server.req('PUT', '/variants/flag', { variant: true, ttl: 600 })).status, 201);
  assert.equal((await server.req('PUT', '/variants/hits', { variant: 7 })).status, 201);
  await go('/variants');
  const cells = async (name: string): Promise<string[]> => page.locator(`#names tr[data-name="${name}"] td`).allTextContents();
  await page.locator('#names tr[data-name="ratio"]').waitFor();
  assert.deepEqual((await cells('ratio')).slice(0, 3), ['ratio', 'double', '1.0']);
  assert.deepEqual((await cells('code')).slice(0, 3), ['code', 'string', '"42"']);
  assert.deepEqual((await cells('hits')).slice(0, 3), ['hits', 'integer', '7']);
  const flag = await cells('flag');
  assert.deepEqual(flag.slice(0, 3), ['flag', 'boolean', 'true']);
  assert.match(flag[3]!, /^\d+$/, 'version');
  assert.match(flag[4]!, /^(9|10) min \d\d s$/, 'ttl');

  // A whole double is shown as 1.0 and can be written back (the old console sent 1 and got 409).
  await go('/variants/ratio');
  await page.locator('#variant-value', { hasText: '1.0' }).waitFor();
  assert.equal(await page.inputValue('#variant-set'), '1.0');
  await page.fill('#variant-set', '2');
  await page.click('#set-variant');
  await ok('#set-status', "variant 'ratio' set to 2.0 (double)");
  assert.match((await server.req('GET', '/variants/ratio')).raw, /"variant":2\.0\}/);

  // The string "42" stays a string.
  await go('/variants/code');
  await page.locator('#variant-type', { hasText: 'string' }).waitFor();
  assert.equal(await page.inputValue('#variant-set'), '42');
  await page.fill('#variant-set', '43');
  await page.click('#set-variant');
  await ok('#set-status', 'set to "43" (string)');
  assert.equal(((await data('/variants/code')) as { variant: unknown }).variant, '43');

  // Booleans through a choice; integers refuse a fraction in the page, before any request.
  // Setting the value keeps what is left of the variant's lifetime (a PUT without ttl made it permanent).
  await server.advance(100_000);
  await go('/variants/flag');
  await page.locator('#variant-ttl', { hasText: /^expires in [78] min \d\d s$/ }).waitFor();
  await page.selectOption('#variant-set', 'false');
  await page.click('#set-variant');
  await ok('#set-status', 'set to false (boolean)');
  assert.equal(((await data('/variants/flag')) as { variant: unknown }).variant, false);
  const left = await lifeLeft('variants', 'flag');
  assert.ok(left !== null && left > 400_000 && left <= 500_000, `after the set ${left} ms are left; 500 s (600 - 100) were`);
  assert.equal(await lifeLeft('variants', 'ratio'), null, 'a variant without ttl gained one');
  await go('/variants/hits');
  await page.fill('#variant-set', '1.5');
  await page.click('#set-variant');
  await err('#set-status', "an integer is whole digits, not '1.5'");
  await page.fill('#delta', '3');
  await page.click('#incr');
  await page.locator('#variant-value', { hasText: '10' }).waitFor();
  assert.equal(((await data('/variants/hits')) as { variant: unknown }).variant, 10);

  // Create one as a double from the list page, then delete it.
  await go('/variants');
  await page.fill('#new-name', 'pi');
  await page.selectOption('#new-type', 'double');
  await page.fill('#new-value', '3');
  await page.click('#create');
  await page.waitForURL(/#\/variants\/pi$/);
  assert.match((await server.req('GET', '/variants/pi')).raw, /"variant":3\.0\}/);
  await page.locator('#variant-type', { hasText: 'double' }).waitFor();
  await page.click('#delete-variant');
  await answerDialog(/^Delete variant 'pi'\?$/, true);
  await ok('#danger-status', "variant 'pi' deleted");
  assert.ok(await page.locator('#delete-variant').isDisabled(), 'nothing left to delete');
  assert.equal((await server.req('GET', '/variants/pi')).status, 404);
});

test('locks: holder, fence and countdown; the token survives navigating away; release', async () => {
  assert.equal((await server.req('PUT', '/locks/jobs', { ttl: 30, holder: 'worker-1' })).status, 201);
  await go('/locks');
  await page.locator('#names tr[data-name="jobs"]').waitFor();
  const cell = page.locator('#names tr[data-name="jobs"] td').last();
  assert.match((await cell.textContent()) ?? '', /^\d+ s$/);
  // The countdown cell is one line ("59 s" must not wrap into the next column).
  const box = await cell.boundingBox();
  assert.ok(box && box.height < 40, `one line: ${JSON.stringify(box)}`);

  await go('/locks/jobs');
  await page.locator('#lock-holder-name', { hasText: 'worker-1' }).waitFor();
  await page.waitForFunction(() => /^\d+\.\d s$/.test(document.querySelector('#lock-countdown')?.textContent ?? ''));
  const left = parseFloat((await page.locator('#lock-countdown').textContent()) ?? '');
  assert.ok(left > 20 && left <= 30, `countdown ${left}`);

  await go('/locks/mine');
  await page.locator('#lock-free').waitFor();
  await page.fill('#lock-holder', 'console-test');
  await page.click('#acquire');
  await ok('#lock-status', /^acquired: fence \d+/);
  const token = await page.inputValue('#lock-token');
  assert.ok(token.length > 8);
  assert.equal(((await data('/locks/mine')) as { holder: string }).holder, 'console-test');
  await go('/');
  await go('/locks/mine');
  assert.equal(await page.inputValue('#lock-token'), token, 'the token is kept for the tab');
  await page.click('#release');
  await ok('#lock-status', "lock 'mine' released");
  assert.equal((await server.req('GET', '/locks/mine')).status, 404);
});

test('lists: create, range view, push at both ends, pop, move, set by index, trim, remove by value, ttl, If-Match, delete', async () => {
  await go('/lists');
  await page.fill('#new-name', 'jobs');
  await page.fill('#new-items', '["a", "b"]');
  await page.click('#create');
  await page.waitForURL(/#\/lists\/jobs$/);
  await page.waitForFunction(() => document.querySelectorAll('#list-items tbody tr').length === 2);
  await page.fill('#list-value', '{"n": 1}');
  await page.click('#push-right');
  await ok('#list-status', 'pushed on the right; length 3');
  await page.fill('#list-value', '"z"');
  await page.click('#push-left');
  await ok('#list-status', 'pushed on the left; length 4');
  assert.deepEqual(((await data('/lists/jobs')) as { items: unknown[] }).items, ['z', 'a', 'b', { n: 1 }]);
  await page.waitForFunction(() => document.querySelectorAll('#list-items tbody tr').length === 4);
  assert.deepEqual(await page.locator('#list-items tbody td.code').allTextContents(), ['"z"', '"a"', '"b"', '{"n":1}']);
  await page.click('#pop-right');
  await answerDialog(/^Pop one item from the right end of 'jobs'\?$/, true);
  await ok('#list-status', 'popped {"n":1} from the right');
  assert.deepEqual(((await data('/lists/jobs')) as { items: unknown[] }).items, ['z', 'a', 'b']);
  // Bad JSON is refused in the page, next to the button.
  await page.fill('#list-value', '{oops');
  await page.click('#push-right');
  await err('#list-status', 'not valid JSON');
  const items = async (name: string): Promise<unknown[]> => ((await data(`/lists/${name}`)) as { items: unknown[] }).items;

  // Set by index; an index outside the list is the server's 400, shown next to the button.
  await page.fill('#set-index', '-2');
  await page.fill('#set-value', '{"A": true}');
  await page.click('#set-item');
  await ok('#set-item-status', 'item -2 is now {"A":true}');
  assert.deepEqual(await items('jobs'), ['z', { A: true }, 'b']);
  await page.fill('#set-index', '7');
  await page.click('#set-item');
  await err('#set-item-status', /^400: .*out of range: the list has 3 items/);
  assert.deepEqual(await items('jobs'), ['z', { A: true }, 'b']);

  // Move (pop with `to`): from the right end of jobs onto the left end of a new list.
  await page.fill('#move-to', 'done');
  await page.click('#move');
  await ok('#move-status', `moved "b" to the left end of 'done'`);
  assert.deepEqual(await items('jobs'), ['z', { A: true }]);
  assert.deepEqual(await items('done'), ['b']);
  await page.selectOption('#move-from', 'left');
  await page.selectOption('#move-to-side', 'right');
  await page.click('#move');
  await ok('#move-status', `moved "z" to the right end of 'done'`);
  assert.deepEqual(await items('jobs'), [{ A: true }]);
  assert.deepEqual(await items('done'), ['b', 'z']);
  await page.fill('#move-to', '..');
  await page.click('#move');
  await err('#move-status', /^400: .*must not be '\.' or '\.\.'/);
  assert.deepEqual(await items('jobs'), [{ A: true }]);

  // Remove by value: the last one only, then every one (objects equal in any key order).
  assert.equal((await server.req('POST', '/lists/jobs/push', { values: ['x', { A: true }, 'x', 'y', 'x'] })).status, 200);
  await page.click('#refresh');
  await page.waitForFunction(() => document.querySelectorAll('#list-items tbody tr').length === 6);
  await page.fill('#remove-value', '"x"');
  await page.fill('#remove-count', '-1');
  await page.click('#remove-items');
  await answerDialog(/^Remove the last 1 item equal to "x" from 'jobs'\?$/, true);
  await ok('#remove-status', 'removed items equal to "x"; length 5');
  assert.deepEqual(await items('jobs'), [{ A: true }, 'x', { A: true }, 'x', 'y']);
  await page.fill('#remove-value', '{"A": true}');
  await page.fill('#remove-count', '0');
  await page.click('#remove-items');
  await answerDialog(/^Remove every item equal to \{"A":true\} from 'jobs'\?$/, true);
  await ok('#remove-status', 'length 3');
  assert.deepEqual(await items('jobs'), ['x', 'x', 'y']);

  // Trim: keep items 1 to -1; cancelling the confirmation changes nothing.
  await page.fill('#trim-start', '1');
  await page.fill('#trim-stop', '-1');
  await page.click('#trim');
  await answerDialog(/^Keep only the items 1 to -1 of 'jobs' \(3 items now\) and remove the rest\?$/, false);
  assert.deepEqual(await items('jobs'), ['x', 'x', 'y']);
  await page.click('#trim');
  await answerDialog(/^Keep only the items 1 to -1 /, true);
  await ok('#trim-status', 'trimmed to items 1 to -1; length 2');
  assert.deepEqual(await items('jobs'), ['x', 'y']);
  await page.waitForFunction(() => document.querySelectorAll('#list-items tbody tr').length === 2);

  await lifetimeCard('lists', 'jobs');

  // Only if unchanged: a change made elsewhere after the page read the list refuses the page's writes (412).
  await guardOn('/lists/jobs');
  assert.equal((await server.req('POST', '/lists/jobs/push', { values: ['elsewhere'] })).status, 200);
  await page.fill('#list-value', '"mine"');
  await page.click('#push-right');
  await err('#list-status', /^412: list 'jobs' changed/);
  await page.fill('#move-to', 'done');
  await page.click('#move');
  await err('#move-status', /^412: /);
  await page.fill('#new-ttl', '60');
  await page.click('#set-ttl');
  await err('#ttl-status', /^412: /);
  assert.deepEqual(await items('jobs'), ['x', 'y', 'elsewhere']);
  assert.deepEqual(await items('done'), ['b', 'z']);
  assert.equal(await lifeLeft('lists', 'jobs'), null);
  // Read again, the page holds the current version: the same write goes through.
  await page.click('#refresh');
  await guardOn('/lists/jobs');
  await page.click('#push-right');
  await ok('#list-status', 'pushed on the right; length 4');
  assert.deepEqual(await items('jobs'), ['x', 'y', 'elsewhere', 'mine']);

  await versionShown('/lists/jobs');
  // Deleting is apart from push and pop: in the Danger card, the last card of the view.
  assert.equal(await page.locator('#push-title').locator('xpath=ancestor::form[1]').locator('#delete-list').count(), 0);
  assert.equal(await page.locator('main .card').last().locator('#danger-title + p + #delete-list').count(), 1);
  await page.click('#delete-list');
  await answerDialog(/^Delete list 'jobs' with its 4 items\?$/, true);
  await page.waitForURL(/#\/lists$/);
  assert.equal((await server.req('GET', '/lists/jobs')).status, 404);
});

test('sets: create, paged members, add, remove, contains, combine (shown and stored), ttl, If-Match, delete', async () => {
  await go('/sets');
  await page.fill('#new-name', 'tags');
  await page.fill('#new-members', 'red\ngreen');
  await page.click('#create');
  await page.waitForURL(/#\/sets\/tags$/);
  await page.waitForFunction(() => document.querySelectorAll('#set-members tbody tr').length === 2);
  await page.fill('#set-add', 'blue\nred');
  await page.click('#set-add-submit');
  await ok('#set-status', '1 member added; 3 members now');
  assert.deepEqual(((await data('/sets/tags')) as { members: string[] }).members, ['blue', 'green', 'red']);
  await page.fill('#set-probe', 'green');
  await page.click('#set-contains');
  await page.locator('#contains-answer', { hasText: "'green' is a member" }).waitFor();
  await page.fill('#set-probe', 'pink');
  await page.click('#set-contains');
  await page.locator('#contains-answer', { hasText: "'pink' is not a member" }).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('#set-members tbody tr').length === 3);
  await page.click('#set-members tbody tr:has-text("green") .remove-member');
  await answerDialog(/^Remove 'green' from set 'tags'\?$/, true);
  await ok('#member-status', "removed 'green'; 2 members left");
  assert.deepEqual(((await data('/sets/tags')) as { members: string[] }).members, ['blue', 'red']);

  // Members come a page at a time from the server (limit/after).
  const members = Array.from({ length: 60 }, (_, i) => `m${String(i).padStart(2, '0')}`);
  assert.equal((await server.req('PUT', '/sets/big', { set: members })).status, 201);
  await go('/sets/big');
  await page.waitForFunction(() => document.querySelectorAll('#set-members tbody tr').length === 50);
  await page.click('text=Next →');
  await page.waitForFunction(() => document.querySelectorAll('#set-members tbody tr').length === 10);
  assert.equal(await page.locator('#set-members tbody td').first().textContent(), 'm50');

  await go('/sets/tags');
  const membersOf = async (name: string): Promise<string[]> => ((await data(`/sets/${name}`)) as { members: string[] }).members;
  // Combine: union, intersection and difference with other sets (a missing one counts as empty), shown in the page.
  assert.equal((await server.req('PUT', '/sets/warm', { set: ['red', 'orange'] })).status, 201);
  const combined = async (): Promise<string[]> => page.locator('#combine-members code').allTextContents();
  await page.fill('#combine-with', 'warm, nothing-here');
  await page.click('#combine');
  await ok('#combine-status', "the union of 'tags' with 'warm', 'nothing-here': 3 members");
  assert.deepEqual(await combined(), ['blue', 'orange', 'red']);
  await page.selectOption('#combine-op', 'inter');
  await page.fill('#combine-with', 'warm');
  await page.click('#combine');
  await ok('#combine-status', "the intersection of 'tags' with 'warm': 1 member");
  assert.deepEqual(await combined(), ['red']);
  await page.selectOption('#combine-op', 'diff');
  await page.click('#combine');
  await ok('#combine-status', "the difference of 'tags' with 'warm': 1 member");
  assert.deepEqual(await combined(), ['blue']);
  // Stored into another set, after a confirmation: the server holds the result.
  await page.selectOption('#combine-op', 'union');
  await page.fill('#combine-store', 'both');
  await page.click('#combine');
  await answerDialog(/^Replace set 'both' with the union of 'tags' with 'warm'\?$/, true);
  await ok('#combine-status', "stored the union of 'tags' with 'warm' in 'both': 3 members");
  assert.deepEqual(await membersOf('both'), ['blue', 'orange', 'red']);
  assert.equal(await page.locator('#combine-members').count(), 0, 'a stored result is not listed');
  // More than 16 sets: the server's 400 next to the button, nothing stored.
  await page.fill('#combine-with', Array.from({ length: 17 }, (_, i) => `s${i}`).join(','));
  await page.click('#combine');
  await answerDialog(/^Replace set 'both' with the union of 'tags' with 's0', /, true);
  await err('#combine-status', /^400: field 'with' must name 1 to 16 sets/);
  assert.deepEqual(await membersOf('both'), ['blue', 'orange', 'red']);

  await lifetimeCard('sets', 'tags');

  // Only if unchanged: after a change elsewhere, add and remove are refused (412) and change nothing.
  await guardOn('/sets/tags');
  assert.equal((await server.req('POST', '/sets/tags/add', { members: ['elsewhere'] })).status, 200);
  await page.fill('#set-add', 'mine');
  await page.click('#set-add-submit');
  await err('#set-status', /^412: set 'tags' changed/);
  await page.click('#set-members tbody tr:has-text("blue") .remove-member');
  await answerDialog(/^Remove 'blue' from set 'tags'\?$/, true);
  await err('#member-status', /^412: set 'tags' changed/);
  assert.deepEqual(await membersOf('tags'), ['blue', 'elsewhere', 'red']);
  await page.click('#refresh');
  await guardOn('/sets/tags');
  await page.click('#set-add-submit');
  await ok('#set-status', '1 member added; 4 members now');
  assert.deepEqual(await membersOf('tags'), ['blue', 'elsewhere', 'mine', 'red']);
  await versionShown('/sets/tags');

  await page.click('#delete-set');
  await answerDialog(/^Delete set 'tags' with its 4 members\?$/, true);
  await page.waitForURL(/#\/sets$/);
  assert.equal((await server.req('GET', '/sets/tags')).status, 404);
});

test('sorted sets: leaderboard by rank and by score, set and increment scores, remove, find, ttl, If-Match, delete', async () => {
  await go('/zsets');
  await page.fill('#new-name', 'board');
  await page.fill('#new-members', '{"ann": 30, "bob": 12.5, "cy": 20}');
  await page.click('#create');
  await page.waitForURL(/#\/zsets\/board$/);
  const members = async (): Promise<string[]> =>
    page.locator('#zset-items tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-member') ?? ''));
  await page.waitForFunction(() => document.querySelectorAll('#zset-items tbody tr').length === 3);
  assert.deepEqual(await members(), ['ann', 'cy', 'bob'], 'highest first');
  assert.deepEqual(await page.locator('#zset-items tbody td.num:first-child').allTextContents(), ['1', '2', '3']);
  await page.fill('#zset-member', 'bob');
  await page.fill('#zset-score', '20');
  await page.click('#zset-incr');
  await ok('#zset-status', "'bob' now has score 32.5");
  await page.waitForFunction(() => document.querySelector('#zset-items tbody tr')?.getAttribute('data-member') === 'bob');
  await page.fill('#zset-member', 'dee');
  await page.fill('#zset-score', '5');
  await page.click('#zset-add');
  await ok('#zset-status', "added 'dee' with score 5");
  assert.deepEqual(await data('/zset/board'), { zset: { dee: 5, cy: 20, ann: 30, bob: 32.5 } });

  await page.selectOption('#zset-by', 'score');
  await page.selectOption('#zset-rev', 'asc');
  await page.fill('#zset-min', '(5');
  await page.fill('#zset-max', '30');
  await page.click('#zset-show');
  await page.waitForFunction(() => document.querySelectorAll('#zset-items tbody tr').length === 2);
  assert.deepEqual(await members(), ['cy', 'ann']);

  await page.click('#zset-items tr[data-member="cy"] .remove-member');
  await answerDialog(/^Remove 'cy' from sorted set 'board'\?$/, true);
  await ok('#member-status', "removed 'cy'");
  assert.equal((await server.req('GET', '/zsets/board/members/cy')).status, 404);
  await page.fill('#zset-lookup', 'ann');
  await page.click('#zset-find');
  await page.locator('#zset-found', { hasText: "'ann': score 30, rank 1 from the lowest, 1 from the highest" }).waitFor();

  await lifetimeCard('zsets', 'board');

  // Only if unchanged: after a change elsewhere, increment and delete are refused (412) and change nothing.
  await guardOn('/zsets/board');
  assert.equal((await server.req('POST', '/zsets/board/incr', { member: 'dee', delta: 1 })).status, 200);
  await page.fill('#zset-member', 'ann');
  await page.fill('#zset-score', '5');
  await page.click('#zset-incr');
  await err('#zset-status', /^412: zset 'board' changed/);
  await page.click('#delete-zset');
  await answerDialog(/^Delete sorted set 'board' with its 3 members\?$/, true);
  await err('#danger-status', /^412: zset 'board' changed/);
  assert.deepEqual(await data('/zset/board'), { zset: { dee: 6, ann: 30, bob: 32.5 } });
  await page.click('#refresh');
  await guardOn('/zsets/board');
  await page.click('#zset-incr');
  await ok('#zset-status', "'ann' now has score 35");
  assert.deepEqual(await data('/zset/board'), { zset: { dee: 6, ann: 35, bob: 32.5 } });
  await versionShown('/zsets/board');

  await page.click('#delete-zset');
  await answerDialog(/^Delete sorted set 'board' with its 3 members\?$/, true);
  await page.waitForURL(/#\/zsets$/);
  assert.equal((await server.req('GET', '/zsets/board')).status, 404);
});

test('change feed: receives, filters by kind and prefix, pauses and resumes with Last-Event-ID, follows a server restart', async () => {
  await go('/feed');
  await page.locator('#feed-state', { hasText: 'following' }).waitFor();
  const rowFor = (name: string) => page.locator(`#feed-events tr[data-name="${name}"]`);
  assert.equal((await server.req('PUT', '/records/feed-a', { record: { v: 1 } })).status, 201);
  await rowFor('feed-a').waitFor();
  const cells = await rowFor('feed-a').locator('td').allTextContents();
  assert.equal(cells[1], 'put');
  assert.equal(cells[2], 'record');
  assert.match(cells[4]!, /^\d+$/);
  // The value, on demand.
  await rowFor('feed-a').locator('summary').click();
  assert.deepEqual(JSON.parse((await rowFor('feed-a').locator('pre').textContent()) ?? ''), { v: 1 });
  // The object's name leads to its view, and back.
  assert.equal(await rowFor('feed-a').locator('a').getAttribute('href'), '#/records/feed-a');
  await rowFor('feed-a').locator('a').click();
  await page.waitForURL(/#\/records\/feed-a$/);
  await page.locator('#record-ttl').waitFor();
  await page.goBack();
  await page.locator('#feed-state', { hasText: 'following' }).waitFor();
  assert.equal((await server.req('PUT', '/records/feed-a', { record: { v: 2 } })).status, 200);
  await rowFor('feed-a').waitFor();

  // Only variants whose name starts with "f-".
  await page.check('input[name=kind][value=variant]');
  await page.fill('#feed-prefix', 'f-');
  await page.click('#feed-apply');
  await page.locator('#feed-state', { hasText: 'following' }).waitFor();
  assert.equal((await server.req('PUT', '/records/f-record', { record: {} })).status, 201);
  assert.equal((await server.req('PUT', '/variants/other', { variant: 1 })).status, 201);
  assert.equal((await server.req('PUT', '/variants/f-one', { variant: 1 })).status, 201);
  await rowFor('f-one').waitFor();
  assert.equal(await rowFor('f-record').count(), 0);
  assert.equal(await rowFor('other').count(), 0);

  // Paused: changes made meanwhile arrive on Resume (Last-Event-ID replay).
  await page.click('#feed-pause');
  await page.locator('#feed-state', { hasText: 'paused' }).waitFor();
  assert.equal((await server.req('POST', '/variants/f-one', { delta: 1 })).status, 200);
  assert.equal((await server.req('PUT', '/variants/f-two', { variant: 2 })).status, 201);
  await page.waitForTimeout(300);
  assert.equal(await rowFor('f-two').count(), 0, 'nothing arrives while paused');
  await page.click('#feed-pause');
  await page.locator('#feed-state', { hasText: 'resumed after event' }).waitFor();
  await rowFor('f-two').waitFor();
  assert.equal(await rowFor('f-one').count(), 2, 'the put and the increment, each once');

  // The server restarts: the page reconnects with its last id and goes on.
  await server.restart();
  assert.equal((await server.req('PUT', '/variants/f-three', { variant: 3 })).status, 201);
  await rowFor('f-three').waitFor({ timeout: 20_000 });
  assert.equal(await rowFor('f-two').count(), 1, 'no event twice after the restart');
  assert.equal(await page.locator('.feed-notice').count(), 0, 'no reset or overflow');
});

test('transactions: compose, run, one result per mutation, checked on the server; an error says nothing changed', async () => {
  await page.locator('body').press('0');
  await page.waitForURL(/#\/txn$/);
  await page.fill(
    '#txn-json',
    JSON.stringify({
      mutations: [
        { name: 'users', operation: 'INSERT', values: { name: 'dan' } },
        { kind: 'variant', name: 'hits', operation: 'ADD', delta: 5 },
      ],
    }),
  );
  await page.click('#txn-run');
  await page.locator('#txn-result li').nth(1).waitFor();
  assert.deepEqual(await page.locator('#txn-result li').allTextContents(), ['table users INSERT → {"t_id":4}', 'variant hits ADD → {"variant":15}']);
  assert.deepEqual(await data('/tables/users/rows/4'), { name: 'dan' });
  await page.fill(
    '#txn-json',
    JSON.stringify({ mutations: [{ kind: 'variant', name: 'hits', operation: 'ADD', delta: 1 }], checks: [{ kind: 'record', name: 'nope', exists: true }] }),
  );
  await page.click('#txn-run');
  await page.locator('#txn-error', { hasText: 'nothing was changed' }).waitFor();
  assert.equal(((await data('/variants/hits')) as { variant: number }).variant, 15);

  // The templates of the list, set and sorted-set mutations and checks, composed in the page and run.
  const compose = async (picks: string[]): Promise<void> => {
    await page.fill('#txn-json', '{"mutations": [], "checks": []}');
    for (const t of picks) {
      await page.selectOption('#txn-template', t);
      await page.click('#txn-add');
    }
  };
  await compose(['list PUSH', 'set ADD', 'zset ADD', 'zset INCR']);
  await page.click('#txn-run');
  await page.locator('#txn-result li').nth(3).waitFor();
  assert.deepEqual(await page.locator('#txn-result li').allTextContents(), [
    'list jobs PUSH → {"length":1}',
    'set tags ADD → {"added":1,"count":1}',
    'zset board ADD → {"added":1,"updated":0,"count":1}',
    'zset board INCR → {"score":11}',
  ]);
  assert.deepEqual(((await data('/lists/jobs')) as { items: unknown[] }).items, ['job-1']);
  assert.deepEqual(((await data('/sets/tags')) as { members: string[] }).members, ['red']);
  assert.deepEqual(await data('/zset/board'), { zset: { ann: 11 } });

  const checks = ['check: list length', 'check: set contains', 'check: set count', 'check: zset member score', 'check: zset count'];
  await compose(['list POP', 'set REMOVE', 'zset REMOVE', ...checks]);
  assert.deepEqual(JSON.parse(await page.inputValue('#txn-json')), {
    mutations: [
      { kind: 'list', name: 'jobs', operation: 'POP', side: 'left', count: 1 },
      { kind: 'set', name: 'tags', operation: 'REMOVE', members: ['red'] },
      { kind: 'zset', name: 'board', operation: 'REMOVE', members: ['ann'] },
    ],
    checks: [
      { kind: 'list', name: 'jobs', length: { $gt: 0 } },
      { kind: 'set', name: 'tags', contains: 'red' },
      { kind: 'set', name: 'tags', count: { $lt: 1000 } },
      { kind: 'zset', name: 'board', member: 'ann', score: { $gte: 10 } },
      { kind: 'zset', name: 'board', count: { $lt: 1000 } },
    ],
  });
  await page.click('#txn-run');
  await page.locator('#txn-result li').nth(2).waitFor();
  assert.deepEqual(await page.locator('#txn-result li').allTextContents(), [
    'list jobs POP → {"items":["job-1"]}',
    'set tags REMOVE → {"removed":1,"count":0}',
    'zset board REMOVE → {"removed":1,"count":0}',
  ]);
  assert.deepEqual(await data('/lists/jobs'), { items: [], length: 0 });
  assert.deepEqual(((await data('/sets/tags')) as { members: string[] }).members, []);
  assert.deepEqual(await data('/zset/board'), { zset: {} });
  // Again: the list is empty now, so the first check fails; the error says so and nothing changes.
  await page.click('#txn-run');
  await page.locator('#txn-error', { hasText: /^409: transaction check 0 failed: list 'jobs' has length 0.* — nothing was changed\.$/ }).waitFor();
  assert.equal(await page.locator('#txn-result').count(), 0);
  assert.deepEqual(((await data('/sets/tags')) as { count: number }).count, 0);
  assert.deepEqual(pageErrors, [], 'no script errors on the page');
});
