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
async function lifeLeft(kind: 'records' | 'variants', name: string): Promise<number | null> {
  const items = ((await data(`/${kind}?prefix=${encodeURIComponent(name)}&limit=1`)) as { items: Array<{ name: string; ttl_ms: number | null }> }).items;
  assert.equal(items[0]?.name, name, `${kind} listing: ${JSON.stringify(items)}`);
  return items[0]!.ttl_ms;
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
  assert.match((await page.locator('#page-info').textContent()) ?? '', /2 rows match/);

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
  assert.match((await page.locator('#page-info').textContent()) ?? '', /page 3 · 60 rows match/);
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
  await ok('#set-status', "variant 'pi' deleted");
  assert.equal((await server.req('GET', '/variants/pi')).status, 404);
});

test('locks: holder, fence and countdown; the token survives navigating away; release', async () => {
  assert.equal((await server.req('PUT', '/locks/jobs', { ttl: 30, holder: 'worker-1' })).status, 201);
  await go('/locks');
  await page.locator('#names tr[data-name="jobs"]').waitFor();
  const cell = page.locator('#names tr[data-name="jobs"] td').last();
  assert.match((await cell.textContent()) ?? '', /^\d+ s$/);
  // The countdown cell is one line (it used to wrap "59 s" into the next column).
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

test('lists: create, range view, push at both ends, pop, delete', async () => {
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
  await page.click('#delete-list');
  await answerDialog(/^Delete list 'jobs' with its 3 items\?$/, true);
  await page.waitForURL(/#\/lists$/);
  assert.equal((await server.req('GET', '/lists/jobs')).status, 404);
});

test('sets: create, paged members, add, remove, contains, delete', async () => {
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
  await page.click('#delete-set');
  await answerDialog(/^Delete set 'tags' with its 2 members\?$/, true);
  await page.waitForURL(/#\/sets$/);
  assert.equal((await server.req('GET', '/sets/tags')).status, 404);
});

test('sorted sets: leaderboard by rank and by score, set and increment scores, remove, find, delete', async () => {
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
  assert.deepEqual(pageErrors, [], 'no script errors on the page');
});
