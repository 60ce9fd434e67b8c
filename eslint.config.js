// Type-aware linting (typescript-eslint with the project's tsconfig): what the compiler does not catch
// in code full of "settle later": a promise nobody awaits or handles, a promise where a callback
// expects a plain value, an await of something that is not a promise.
import { includeIgnoreFile } from 'eslint/config';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // What git ignores (node_modules, dist, tmp/, the generated Prisma client, load test results, ...) is
  // not the project's code: eslint skips it too.
  includeIgnoreFile(`${import.meta.dirname}/.gitignore`, 'the .gitignore'),
  { ignores: ['loadtest/k6/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // An async function without await is how a callback meets a promise-returning interface here.
      '@typescript-eslint/require-await': 'off',
      // Methods of object literals (`{ async stop() {...} }`) are passed around on purpose; none uses `this`.
      '@typescript-eslint/unbound-method': 'off',
      // Flags `let failed = false; try { ...; failed = true } finally { ... }`, the shape every runner here
      // has on purpose (the value is read in the finally or after a catch).
      'no-useless-assignment': 'off',
      // A `let` read by a callback before its one assignment (a fault hook that kills the process spawned next).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  // The layers (docs/architecture.md): the stores import neither each other nor the application layer;
  // the domain imports no other package; an app reaches the stores through packages/sales. Checked here,
  // with no database, on every `npm run lint` (test/architecture.test.ts checks the same in the suite).
  {
    files: ['packages/redis-store/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['@flashsale/order-store', '@flashsale/order-store/*', '@flashsale/sales', '@flashsale/sales/*'], message: 'a store imports neither the other store nor the application layer (packages/sales)' }] }] },
  },
  {
    files: ['packages/order-store/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['@flashsale/redis-store', '@flashsale/redis-store/*', '@flashsale/sales', '@flashsale/sales/*'], message: 'a store imports neither the other store nor the application layer (packages/sales)' }] }] },
  },
  {
    files: ['packages/domain/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['@flashsale/*'], message: 'the domain imports no other package' }] }] },
  },
  {
    files: ['apps/*/src/**/*.ts'],
    // The app files that still reach a store themselves, to be moved behind packages/sales (issue 43): the
    // list only shrinks; a new file of an app cannot import a store.
    ignores: [
      '**/*.test.ts',
      'apps/gateway/src/dashboard/admin-auth.ts',
      'apps/gateway/src/dashboard/dashboard.route.ts',
      'apps/gateway/src/dashboard/door-view.ts',
      'apps/gateway/src/dashboard/live-views.ts',
      'apps/gateway/src/dashboard/sale-history.ts',
      'apps/gateway/src/dashboard/session-checks.ts',
      'apps/gateway/src/gateway.ts',
      'apps/gateway/src/purchase/live-sale-directory.ts',
      'apps/gateway/src/purchase/purchase-handler.ts',
      'apps/gateway/src/purchase/sale-events-listener.ts',
      'apps/gateway/src/routes/admin.route.ts',
      'apps/gateway/src/routes/creation-key.ts',
      'apps/gateway/src/routes/payments.route.ts',
      'apps/reconciler/src/main.ts',
      'apps/reconciler/src/metrics.ts',
      'apps/reconciler/src/reconcile-cli.ts',
      'apps/reconciler/src/reconciler.ts',
      'apps/reconciler/src/watch-rota.ts',
      'apps/worker/src/main.ts',
      'apps/worker/src/order-worker.ts',
      'apps/worker/src/sale-backoff.ts',
      'apps/worker/src/warm-up.ts',
    ],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['@flashsale/redis-store', '@flashsale/redis-store/*', '@flashsale/order-store', '@flashsale/order-store/*'], message: 'an app reaches the stores through packages/sales' }] }] },
  },
  {
    // Matchers (`expect.any(Number)`, `expect.objectContaining`) are typed `any` on purpose.
    files: ['**/*.test.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    // The dashboard's page script: a classic browser script (no modules, no build step).
    files: ['apps/gateway/public/admin/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: { document: 'readonly', window: 'readonly', location: 'readonly', fetch: 'readonly', EventSource: 'readonly', setTimeout: 'readonly', confirm: 'readonly' },
    },
  },
  {
    // The buyer's page: ES modules the browser loads as they are (buyer-api.js also runs in Node tests),
    // and its proof-of-work worker.
    files: ['apps/gateway/public/buyer/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        document: 'readonly', window: 'readonly', location: 'readonly', history: 'readonly', navigator: 'readonly', localStorage: 'readonly', indexedDB: 'readonly',
        fetch: 'readonly', setTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', Option: 'readonly', Worker: 'readonly',
        URL: 'readonly', btoa: 'readonly', atob: 'readonly', self: 'readonly', crypto: 'readonly', performance: 'readonly', TextEncoder: 'readonly',
      },
    },
  },
);
