// Second half of the console build (`npm run build`): tsc has compiled web/*.ts and the
// client into dist/console/; this copies the static files next to them. No network, no bundler.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const web = path.dirname(fileURLToPath(import.meta.url));
const out = path.join(web, '..', 'dist', 'console');
mkdirSync(out, { recursive: true });
for (const f of readdirSync(web)) {
  if (/\.(html|css|svg|ico|png)$/.test(f)) copyFileSync(path.join(web, f), path.join(out, f));
}
