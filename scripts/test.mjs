// The README's test command (`npm test`, after `npm run build`): the whole
// black-box suite on the embedded log store, then the store-parameterised
// part of it again on a throw-away PostgreSQL cluster (test/helpers/postgres.ts
// starts it, runs the command given, and removes it). Both passes always run;
// the exit status is the first failure's.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const RUNNER = ['--test', '--test-concurrency=2', '--test-timeout=300000'];

/** Every *.test.js under dir, in byte order of their paths. */
function tests(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tests(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out.sort();
}

function run(argv) {
  const r = spawnSync(process.execPath, argv, { stdio: 'inherit' });
  return r.status ?? 1;
}

const multinode = path.join('dist', 'test', 'multinode') + path.sep;
const logPass = tests(path.join('dist', 'test')).filter((p) => !p.startsWith(multinode));
const pgPass = [
  ...tests(path.join('dist', 'test', 'server')),
  ...tests(path.join('dist', 'test', 'multinode')),
  'dist/test/store/query.property.test.js',
  'dist/test/store/pg-cursor.test.js',
  'dist/test/store/pg-sweep.test.js',
  'dist/test/store/pg-round-trips.test.js',
];

const first = run([...RUNNER, ...logPass]);
const second = run(['dist/test/helpers/postgres.js', process.execPath, ...RUNNER, ...pgPass]);
process.exit(first !== 0 ? first : second);
