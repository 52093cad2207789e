// Second half of the console build (`npm run build`): tsc has type-checked web/ (no output);
// esbuild bundles web/main.tsx with Preact, uPlot and the typed client into one file,
// dist/console/app.js, and the static files are copied beside it. Everything the page
// loads comes from dist/console/: no CDN, nothing fetched at run time from elsewhere.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const web = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(web, '..');
const out = path.join(root, 'dist', 'console');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [path.join(web, 'main.tsx')],
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: 'linked',
  legalComments: 'linked',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outfile: path.join(out, 'app.js'),
  logLevel: 'warning',
});
for (const f of readdirSync(web)) {
  if (/\.(html|css|svg|png)$/.test(f)) copyFileSync(path.join(web, f), path.join(out, f));
}
copyFileSync(path.join(root, 'node_modules', 'uplot', 'dist', 'uPlot.min.css'), path.join(out, 'uplot.css'));
