import { defineConfig } from 'vitest/config';

// Tests run against the real Redis and MariaDB (`npm test` makes sure they answer first). Each test file
// works under its own Redis prefix and its own sales; the database is a separate one, migrated once.
export default defineConfig({
  // The workspace packages' TypeScript sources (their `@flashsale/source` export), not their build, so
  // tests never need `npm run build`. For every Vite environment: the tests' and the global setup's; Vitest
  // also passes the condition to its worker processes (`--conditions`).
  plugins: [{ name: 'flashsale-sources', configEnvironment: () => ({ resolve: { conditions: ['@flashsale/source'] } }) }],
  test: {
    include: ['apps/*/src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts', 'loadtest/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    env: {
      NODE_ENV: 'test',
      DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale_test',
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      LOG_LEVEL: 'silent',
    },
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
