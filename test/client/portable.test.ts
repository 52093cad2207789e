/**
 * The client runs wherever `fetch` does (client/README.md: Node ≥ 18, Deno,
 * Bun, browsers, edge runtimes): what its package ships imports only its own
 * files and touches none of Node's globals. The browser half is proven by
 * the console, which bundles this client and runs in Chromium
 * (test/console/); this checks the files every runtime loads.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const ROOT = fileURLToPath(new URL('../../../client/dist/', import.meta.url));

test('the built client imports only its own files and uses no Node globals, in both its ESM and CommonJS builds', () => {
  let files = 0;
  for (const flavour of ['esm', 'cjs']) {
    const dir = path.join(ROOT, flavour);
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.js'))) {
      // The code, without its comments (which name the package and Node's processes).
      const text = readFileSync(path.join(dir, name), 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      files++;
      const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]!);
      for (const s of specifiers) assert.ok(s.startsWith('./'), `${flavour}/${name} imports '${s}', which is not one of the client's own files`);
      for (const global of ['Buffer', 'process', '__dirname', 'setImmediate']) {
        assert.ok(!new RegExp(`\\b${global}\\b`).test(text), `${flavour}/${name} uses ${global}, which only Node has`);
      }
    }
  }
  assert.ok(files >= 10, `${files} files checked`);
});
