// `npm run check:package` (CI runs it from .ci/run): proves that the two packages install
// and work the way a user installs them, away from this checkout.
//
// 1. `npm pack` of the server (its `prepare` builds it; with --built, the checkout's build
//    is current and packed as it is) and of the client (client/), and a check of what each tarball holds: only built code, types and the console, no tests,
//    benchmarks, sources or source maps, and a packed size under its budget.
// 2. A fresh project in a temporary directory installs the client tarball (and the server
//    tarball, for `pithos/client`), then TypeScript and @types/node at the versions this
//    checkout pins (from npm's cache when it has them: nothing is fetched from outside the
//    npm registry).
// 3. `npm install -g` of the server tarball into a temporary prefix; its `pithos` starts a
//    server that serves the console, and its CLI answers.
// 4. The client against that server from plain ESM, from CommonJS, from TypeScript
//    (`strict`, `nodenext`, both module formats) and through `pithos/client`; the types
//    also compile for a browser (DOM lib, no Node types). The example in client/README.md
//    runs as written, against that server.
// 5. With --git: a second fresh project installs the client from a git URL of this
//    checkout's HEAD (`git+file://…#<sha>::path:client`, which runs its `prepare`) and uses
//    it from ESM, CommonJS and TypeScript again. --git-server also installs the server
//    from git (`pithos/client` and its CLI); that costs a clone's full `npm install` and
//    two builds, so CI leaves it out.
//
// Any failed step exits non-zero. --keep leaves the temporary directory for a look.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const tmp = mkdtempSync(path.join(os.tmpdir(), 'pithos-package-'));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const started = Date.now();

/** Packed-size budgets in bytes: a jump past one means something got in that should not. */
const BUDGET = { pithos: 600_000, 'pithos-client': 40_000 };
/** Paths no tarball may hold: tests, benchmarks, TypeScript sources (not .d.ts), maps. */
const REFUSED = [/(^|\/)(test|tests|bench)\//, /\.map$/, /(?<!\.d)\.ts$/, /\.tsx$/, /(^|\/)tsconfig[^/]*\.json$/];
const NEEDED = {
  pithos: [
    'bin/pithos',
    'dist/src/main.js',
    'dist/src/cli/main.js',
    'dist/client/index.js',
    'dist/console/index.html',
    'dist/console/app.js',
    'client/dist/esm/index.d.ts',
    'client/dist/cjs/index.js',
  ],
  'pithos-client': ['README.md', 'dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json'],
};

function step(what) {
  console.log(`package-check: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}

function run(cmd, argv, cwd, env = {}) {
  return execFileSync(cmd, argv, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

/** Packs dir into tmp (running its prepare, unless --built) and checks the tarball; returns its path. */
function pack(dir) {
  const scripts = args.has('--built') ? ['--ignore-scripts'] : [];
  const [info] = JSON.parse(run(npm, ['pack', '--json', ...scripts, '--pack-destination', tmp], dir).replace(/^[^[]*/s, ''));
  const files = info.files.map((f) => f.path);
  const refused = files.filter((f) => REFUSED.some((re) => re.test(f)));
  const missing = NEEDED[info.name].filter((f) => !files.includes(f));
  console.log(`  ${info.filename}: ${info.size} bytes packed, ${info.unpackedSize} unpacked, ${files.length} files`);
  if (refused.length > 0) throw new Error(`${info.filename} holds what a user does not need: ${refused.join(', ')}`);
  if (missing.length > 0) throw new Error(`${info.filename} lacks ${missing.join(', ')}`);
  if (info.size > BUDGET[info.name]) throw new Error(`${info.filename} is ${info.size} bytes packed, over its budget of ${BUDGET[info.name]}`);
  return path.join(tmp, info.filename);
}

const devVersion = (name) => JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).devDependencies[name];

/** The ESM, CommonJS and TypeScript files that use the client; each prints one line. */
function writeProject(app) {
  mkdirSync(app, { recursive: true });
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'smoke', version: '1.0.0', private: true }, null, 2));
  const use = (Pithos, PithosError, label) => `
const db = new ${Pithos}({ url: process.env.PITHOS_URL ?? '', token: process.env.PITHOS_TOKEN });
const table = '${label}_' + Math.random().toString(36).slice(2);
await db.createTable(table);
const { t_id } = await db.insertRow(table, { name: 'ann', age: 31 });
const rows = await db.queryRows(table, { age: { $gte: 18 } });
if (t_id !== 1 || JSON.stringify(rows) !== '[{"name":"ann","age":31}]') throw new Error('${label}: unexpected ' + JSON.stringify(rows));
const missing = await db.getRecord('missing').then(() => 0, (err) => (err instanceof ${PithosError} ? err.status : -1));
if (missing !== 404) throw new Error('${label}: a missing record gave ' + missing);
console.log('  ${label}: ok');`;
  writeFileSync(path.join(app, 'esm.mjs'), `import { Pithos, PithosError } from 'pithos-client';\n${use('Pithos', 'PithosError', 'esm')}\n`);
  writeFileSync(
    path.join(app, 'server-client.mjs'),
    `import { Pithos, PithosError } from 'pithos/client';\n${use('Pithos', 'PithosError', 'pithos_client')}\n`,
  );
  writeFileSync(
    path.join(app, 'cjs.cjs'),
    `const { Pithos, PithosError } = require('pithos-client');\n(async () => {${use('Pithos', 'PithosError', 'cjs')}\n})().catch((err) => { console.error(err); process.exit(1); });\n`,
  );
  mkdirSync(path.join(app, 'ts'));
  writeFileSync(
    path.join(app, 'ts', 'esm.mts'),
    `import { Pithos, PithosError, type Row } from 'pithos-client';\n${use('Pithos', 'PithosError', 'ts_esm')}\nconst typed: Row[] = rows;\nvoid typed;\n`,
  );
  writeFileSync(
    path.join(app, 'ts', 'cjs.cts'),
    `import { Pithos, PithosError } from 'pithos-client';\n(async () => {${use('Pithos', 'PithosError', 'ts_cjs')}\n})().catch((err: unknown) => { console.error(err); process.exit(1); });\n`,
  );
  const strict = { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmitOnError: true };
  // The browser build checks every declaration file (the client's own included); this one
  // skips them, because checking all of @types/node took most of the step's 30 s.
  const node = { ...strict, skipLibCheck: true, types: ['node'], outDir: 'out' };
  writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: node, include: ['ts'] }, null, 2));
  mkdirSync(path.join(app, 'browser'));
  writeFileSync(
    path.join(app, 'browser', 'page.mts'),
    "import { Pithos, parseSSE } from 'pithos-client';\nconst db = new Pithos({ url: '' });\nconst n: number = await db.incr('visits');\nfor await (const e of db.watch({ kind: 'variant' })) document.title = `${n} ${e.event}`;\nvoid parseSSE;\n",
  );
  writeFileSync(
    path.join(app, 'tsconfig.browser.json'),
    JSON.stringify(
      { compilerOptions: { ...strict, skipLibCheck: false, types: [], lib: ['es2022', 'dom', 'dom.iterable'], noEmit: true }, include: ['browser'] },
      null,
      2,
    ),
  );
}

/** Starts the installed `pithos`; resolves with its URL once it listens. */
function startServer(bin, dataDir, token) {
  const child = spawn(bin, ['--port', '0', '--data-dir', dataDir, '--auth-token', token], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const url = new Promise((resolve, reject) => {
    const seen = (chunk) => {
      log += chunk;
      const m = /listening on (http:\/\/[^\s"]+)/.exec(log);
      if (m) resolve(m[1]);
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => reject(new Error(`the installed pithos exited (${code}) before it listened:\n${log}`)));
    setTimeout(() => reject(new Error(`the installed pithos did not listen within 30 s:\n${log}`)), 30_000).unref();
  });
  return { child, url };
}

async function expectPage(url, type) {
  const res = await fetch(url);
  const body = await res.text();
  if (res.status !== 200 || !res.headers.get('content-type')?.startsWith(type) || body.length === 0) {
    throw new Error(`GET ${url}: ${res.status} ${res.headers.get('content-type')}, ${body.length} bytes`);
  }
}

async function smokeInstalled(app, prefix, env) {
  step('the installed server serves the console');
  await expectPage(`${env.PITHOS_URL}/console/`, 'text/html');
  await expectPage(`${env.PITHOS_URL}/console/app.js`, 'text/javascript');
  step('the installed CLI');
  const health = run(path.join(prefix, 'bin', 'pithos'), ['health', '-o', 'json'], app, env);
  if (!/"status":"success"/.test(health)) throw new Error(`pithos health: ${health}`);
  console.log('  pithos health: ok');
  const version = run(path.join(prefix, 'bin', 'pithos'), ['version'], app, env).trim();
  const packed = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;
  if (!version.includes(packed)) throw new Error(`pithos version printed ${version}, not ${packed}`);
  console.log(`  pithos version: ${version}`);
  useClient(app, env, ['server-client.mjs']);
  step("the example in the client's README");
  const readme = readFileSync(path.join(root, 'client', 'README.md'), 'utf8');
  const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (example === undefined) throw new Error('client/README.md has no ```ts example');
  // As written, but pointed at the check's server instead of the default port.
  writeFileSync(path.join(app, 'readme.mjs'), example.replace("'http://127.0.0.1:2668'", 'process.env.PITHOS_URL'));
  const said = run(process.execPath, ['readme.mjs'], app, env);
  if (said.trim() !== "record 'missing' does not exist") throw new Error(`the README's example printed ${said}`);
  console.log('  README example: ok');
}

/** Runs the client from ESM, CommonJS (and the extra files given), then from TypeScript. */
function useClient(app, env, extra = []) {
  step(`the client from ESM, CommonJS${extra.length > 0 ? ' and pithos/client' : ''}`);
  for (const f of ['esm.mjs', 'cjs.cjs', ...extra]) process.stdout.write(run(process.execPath, [f], app, env));
  step('the client from TypeScript (strict, nodenext) and for a browser');
  const tsc = path.join(app, 'node_modules', 'typescript', 'bin', 'tsc');
  run(process.execPath, [tsc, '-p', 'tsconfig.json'], app);
  run(process.execPath, [tsc, '-p', 'tsconfig.browser.json'], app);
  for (const f of ['out/esm.mjs', 'out/cjs.cjs']) process.stdout.write(run(process.execPath, [f], app, env));
}

/** Installs the client (and with --git-server the server) from git URLs of HEAD into a fresh project and uses it. */
function fromGit(env, tools) {
  const head = run('git', ['rev-parse', 'HEAD'], root).trim();
  if (run('git', ['status', '--porcelain'], root).trim() !== '') console.log('  (the checkout has uncommitted changes: git installs use HEAD)');
  const app = path.join(tmp, 'git-app');
  writeProject(app);
  const repo = `git+file://${root}#${head}`;
  const server = args.has('--git-server');
  run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', `${repo}::path:client`, ...(server ? [repo] : []), ...tools], app);
  useClient(app, env, server ? ['server-client.mjs'] : []);
  if (server) process.stdout.write(run(process.execPath, [path.join(app, 'node_modules', 'pithos', 'bin', 'pithos'), 'version'], app, env));
}

async function main() {
  step('pack the server and the client');
  const server = pack(root);
  const client = pack(path.join(root, 'client'));
  step('install the tarballs into a fresh project');
  const app = path.join(tmp, 'app');
  writeProject(app);
  const quiet = ['--no-audit', '--no-fund', '--prefer-offline'];
  const tools = [`typescript@${devVersion('typescript')}`, `@types/node@${devVersion('@types/node')}`];
  run(npm, ['install', ...quiet, client, server, ...tools], app);
  const prefix = path.join(tmp, 'global');
  run(npm, ['install', '-g', ...quiet, '--prefix', prefix, server], app);
  step('start the installed server');
  const token = 'package-check-token';
  const { child, url } = startServer(path.join(prefix, 'bin', 'pithos'), path.join(tmp, 'data'), token);
  try {
    const env = { PITHOS_URL: await url, PITHOS_TOKEN: token };
    await smokeInstalled(app, prefix, env);
    if (args.has('--git') || args.has('--git-server')) {
      step(`install the client${args.has('--git-server') ? ' and the server' : ''} from a git URL of HEAD`);
      fromGit(env, tools);
    }
  } finally {
    child.kill('SIGTERM');
  }
  step('every step passed');
}

try {
  await main();
} catch (err) {
  console.error(`package-check: FAILED: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  if (args.has('--keep')) console.log(`package-check: left ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
}
