import { defineConfig } from 'vitest/config';
// The harness's own file: the config is loaded before the workspace sources' condition applies.
import { newTestRunId, TEST_RUN_VARIABLE } from './packages/harness/src/test-run.ts';

// One id per run, inherited by every process the run starts: the global teardown finds what the run
// left by it (test/global-setup.ts). A run started by a test (the clean-up check) is given its own.
process.env[TEST_RUN_VARIABLE] ??= newTestRunId();

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
    setupFiles: ['test/process-cleanup.ts'],
    env: {
      NODE_ENV: 'test',
      DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale_test',
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      LOG_LEVEL: 'silent',
      // Tests play whole crowds from one address; a test of the join budget sets its own.
      QUEUE_JOINS_PER_ADDRESS_PER_SECOND: '0',
    },
    pool: 'forks',
    // Three files at a time: 740 s against 977 s with two (2026-11-26). The long files mostly wait on
    // processes they started, and every file is written to hold beside two CPU hogs, more load than a
    // third file adds. A test that counts a store's work counts on a server of its own, with nothing
    // of another file's in its window (the cost tests stop the gateway's dashboard history, which
    // follows every sale live in the shared MySQL).
    maxWorkers: 3,
    // Generous, and one for all: a bound that is not what a test is about must not fail it on a busy
    // machine (the suite is checked with two CPU hogs beside it). What a test is about, it bounds itself.
    testTimeout: 240_000,
    hookTimeout: 240_000,
    // expect.poll's own default is 1 s: a wait for what a test can see happen, never its subject.
    expect: { poll: { timeout: 60_000 } },
  },
});
