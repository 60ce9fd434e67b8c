import { describeLeftovers, findLeftovers, isClean, processesOfRun, removeLeftovers, testRunId } from '@flashsale/harness';
import { migrate } from '@flashsale/order-store';
import { setTimeout as sleep } from 'node:timers/promises';

const databaseUrl = process.env.TEST_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale_test';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Migrates the test database once per run (the same runner as `npm run db:migrate`); after the run,
 * fails it if it left anything behind: a process it started, a Redis key under one of its prefixes, a
 * database of its own (each is named after the run: see packages/harness/src/test-run.ts). What is left
 * is removed, and listed in the failure.
 */
export default async function setup(): Promise<() => Promise<void>> {
  await migrate(databaseUrl);
  return async function teardown() {
    const run = testRunId();
    // The test processes have just exited, killing their processes' groups on the way out: give the
    // kernel a moment to finish them before counting what is still there.
    for (let waited = 0; waited < 10_000 && processesOfRun(run).length > 0; waited += 200) await sleep(200);
    const left = await findLeftovers(run, { redisUrl, databaseUrl });
    if (isClean(left)) return;
    await removeLeftovers(left, { redisUrl, databaseUrl });
    throw new Error(
      `the test run ${run} left these behind (now removed); a test or the harness does not clean up:\n${describeLeftovers(left)}`,
    );
  };
}
