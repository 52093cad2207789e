// The shape check (CONTRIBUTING.md): no source file over 600 lines and no
// function over 80 lines, blank lines and comments included, so that each
// module keeps one job a reader can hold in their head.
//
//   node scripts/shape.mjs [dir-or-file ...]      (default: src and client)
//
// Prints every offender and exits 1 if there is one. It uses ESLint's own
// max-lines and max-lines-per-function rules with the TypeScript parser and
// nothing else, so it needs no type information and runs in seconds.
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

export const MAX_FILE_LINES = 600;
export const MAX_FUNCTION_LINES = 80;

const targets = process.argv.slice(2);
const eslint = new ESLint({
  overrideConfigFile: true,
  overrideConfig: [
    // The client package's build output, not its source.
    { ignores: ['client/dist/**', 'client/node_modules/**'] },
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser },
      // The lint gate's disable comments name rules this check does not load.
      linterOptions: { reportUnusedDisableDirectives: 'off' },
      rules: {
        'max-lines': ['error', { max: MAX_FILE_LINES }],
        'max-lines-per-function': ['error', { max: MAX_FUNCTION_LINES }],
      },
    },
  ],
});
const results = await eslint.lintFiles(targets.length > 0 ? targets : ['src', 'client']);
let offenders = 0;
for (const r of results) {
  for (const m of r.messages) {
    if (m.ruleId !== 'max-lines' && m.ruleId !== 'max-lines-per-function') continue;
    offenders++;
    const where = `${r.filePath.slice(process.cwd().length + 1)}:${m.line}`;
    process.stdout.write(`${where}  ${m.message}\n`);
  }
}
if (offenders > 0) {
  process.stdout.write(`${offenders} offender(s): files at most ${MAX_FILE_LINES} lines, functions at most ${MAX_FUNCTION_LINES}\n`);
  process.exit(1);
}
process.stdout.write(`shape ok: every file at most ${MAX_FILE_LINES} lines, every function at most ${MAX_FUNCTION_LINES}\n`);
