// The lint gate (CONTRIBUTING.md): type-aware rules that catch what review
// kept finding by hand. Promises that nobody awaits or handles, a promise
// passed where a plain callback is expected, a switch over a union that
// forgets a member, and a failure swallowed without a word.
import tseslint from 'typescript-eslint';

const silentCatch = "CallExpression[callee.property.name='catch'] > ArrowFunctionExpression";
const silentError = "CallExpression[callee.property.name=/^(on|once)$/][arguments.0.value='error'] > ArrowFunctionExpression";
const swallowed = 'a swallowed failure: handle it or log it with its cause';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tmp/**', 'client/dist/**', 'client/node_modules/**', 'web/build.mjs', 'eslint.config.js'] },
  {
    files: ['src/**/*.ts', 'client/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'web/**/*.ts', 'web/**/*.tsx'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // node:test's test() and describe() hand their promise to the runner.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/await-thenable': 'error',
      'no-empty': ['error', { allowEmptyCatch: false }],
    },
  },
  {
    files: ['src/**/*.ts', 'client/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'web/**/*.ts', 'web/**/*.tsx'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    // Dependencies point downward (docs/architecture.md): only the log store and the
    // process entry points (src/main.ts, src/rekey.ts, src/config.ts) import the engine.
    files: ['src/http/**/*.ts', 'src/cli/**/*.ts', 'src/store/*.ts', 'src/store/postgres/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+engine(/|$)', message: 'only src/store/log/ and the entry points import src/engine/ (docs/architecture.md)' }] },
      ],
    },
  },
  {
    // In src/, a failure is handled or logged with its cause: `.catch(() => undefined)`,
    // `.catch(() => {})` and `.on('error', () => undefined)` hide both. A handler that does
    // nothing by design is a named function, and no-empty-function makes its body hold a
    // comment saying why nothing is lost (`.catch(raced)` in src/store/postgres/primary.ts).
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: `${silentCatch}[body.type='Identifier'][body.name='undefined']`, message: swallowed },
        { selector: `${silentCatch}[body.type='BlockStatement'][body.body.length=0]`, message: swallowed },
        { selector: `${silentError}[body.type='Identifier'][body.name='undefined']`, message: swallowed },
        { selector: `${silentError}[body.type='BlockStatement'][body.body.length=0]`, message: swallowed },
      ],
      '@typescript-eslint/no-empty-function': 'error',
    },
  },
);
