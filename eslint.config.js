// Type-aware linting (typescript-eslint with the project's tsconfig): what the compiler does not catch
// in code full of "settle later": a promise nobody awaits or handles, a promise where a callback
// expects a plain value, an await of something that is not a promise.
import { includeIgnoreFile } from 'eslint/config';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The pattern that keeps every package from importing an app. */
const NO_APP = {
  group: ['@flashsale/gateway', '@flashsale/worker', '@flashsale/reconciler', '**/apps/**'],
  message: 'a package never imports an app',
};

/** `no-restricted-imports` refusing `patterns` in the non-test files under `files`, with more `ignores` or `rules`. */
const restrictImports = (files, patterns, { ignores = [], rules = {} } = {}) => ({
  files,
  ignores: ['**/*.test.ts', ...ignores],
  rules: { 'no-restricted-imports': ['error', { patterns }], ...rules },
});

/** A store's layer: it imports neither the other store nor the application layer (packages/sales), by name or by path. */
const storeLayer = (store, other) =>
  restrictImports(
    [`packages/${store}/src/**/*.ts`],
    [
      {
        group: [`@flashsale/${other}`, `@flashsale/${other}/*`, '@flashsale/sales', '@flashsale/sales/*', `**/${other}/**`, '**/sales/**'],
        message: 'a store imports neither the other store nor the application layer (packages/sales)',
      },
      NO_APP,
    ],
  );

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
  // The layers (docs/architecture.md), checked here with no database on every `npm run lint`
  // (test/architecture.test.ts checks the same in the suite). An app reaches the domain through one door,
  // the facade of packages/sales (createSales, built by packages/bootstrap), as Immich's controllers reach
  // only services; the stores import neither each other nor the application layer; the domain imports no
  // other package; no package imports an app. A package is imported by its name: a relative path into
  // another package's files would be a way around the rule, and is refused as well. Test files may reach
  // anywhere (they set up and inspect the stores themselves).
  restrictImports(
    ['apps/*/src/**/*.ts'],
    [
      {
        group: [
          '@flashsale/*',
          '!@flashsale/sales',
          '!@flashsale/bootstrap',
          '!@flashsale/domain',
          '!@flashsale/runtime',
          '!@flashsale/config',
        ],
        message:
          'an app imports only @flashsale/sales (the use cases: createSales), bootstrap, domain, runtime and config; a store or the reconcile queue is reached through the facade',
      },
      { group: ['@flashsale/*/*'], message: "an app imports a package's main entry, never its testing entry or one of its files" },
      { group: ['**/packages/**'], message: 'an app imports a package by its name, never one of its files by path' },
    ],
    {
      rules: {
        // no-restricted-imports does not look at import(): the same rule for a dynamic import.
        'no-restricted-syntax': [
          'error',
          {
            selector: 'ImportExpression[source.value=/^@flashsale\\/(?!(sales|bootstrap|domain|runtime|config)$)|\\/packages\\//]',
            message: 'an app imports only @flashsale/sales, bootstrap, domain, runtime and config, by name, dynamically too',
          },
        ],
      },
    },
  ),
  storeLayer('redis-store', 'order-store'),
  storeLayer('order-store', 'redis-store'),
  restrictImports(
    ['packages/domain/src/**/*.ts'],
    [{ group: ['@flashsale/*', '**/packages/**', '**/apps/**'], message: 'the domain imports no other package' }],
  ),
  restrictImports(['packages/*/src/**/*.ts'], [NO_APP], {
    ignores: ['packages/redis-store/**', 'packages/order-store/**', 'packages/domain/**'],
  }),
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
      globals: {
        document: 'readonly',
        window: 'readonly',
        location: 'readonly',
        fetch: 'readonly',
        EventSource: 'readonly',
        setTimeout: 'readonly',
        confirm: 'readonly',
      },
    },
  },
  {
    // The buyer's page: ES modules the browser loads as they are (buyer-api.js also runs in Node tests),
    // and its proof-of-work worker.
    files: ['apps/gateway/public/buyer/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        document: 'readonly',
        window: 'readonly',
        location: 'readonly',
        history: 'readonly',
        navigator: 'readonly',
        localStorage: 'readonly',
        indexedDB: 'readonly',
        fetch: 'readonly',
        setTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        Option: 'readonly',
        Worker: 'readonly',
        URL: 'readonly',
        btoa: 'readonly',
        atob: 'readonly',
        self: 'readonly',
        crypto: 'readonly',
        performance: 'readonly',
        TextEncoder: 'readonly',
      },
    },
  },
);
