import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { describeLeftovers, findLeftovers, newTestRunId, TEST_RUN_VARIABLE } from '@flashsale/harness';
import { runProcess } from '../support/run-process.ts';

// The suite's own clean-up, checked the way it fails for real: a fault test run by Vitest (a run of its
// own, with its own id) is made to fail on purpose (FLASHSALE_FAIL_ON_PURPOSE, read by the harness only),
// and afterwards nothing of that run is left: no process, no Redis key under its prefixes, no database.
// `startup` fails a start-up wait (the harness kills what it started); `abandon` fails a start and drops
// the process (a gateway with its cluster workers), which only the safety nets stop: the test file's
// end, the test process's exit. Either way the run's teardown would have listed anything left.

const VITEST = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));
const stores = {
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  databaseUrl: process.env.DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale_test',
};

async function failOnPurpose(file: string, how: 'startup' | 'abandon') {
  const run = newTestRunId();
  // --bail=1: the file's first failure is the case; its other tests would fail the same way again.
  const result = await runProcess(process.execPath, [VITEST, 'run', '--bail=1', file], {
    [TEST_RUN_VARIABLE]: run,
    FLASHSALE_FAIL_ON_PURPOSE: how,
    CI: 'true',
  });
  return { run, result, output: result.stdout + result.stderr };
}

describe('a test run in which a fault test fails on purpose', () => {
  it('leaves no process, Redis key or database behind, whether the start-up wait failed or the process was dropped', async () => {
    // One after the other: each is a whole system's start.
    const runs = [
      await failOnPurpose('test/faults/statement-timeout.test.ts', 'startup'),
      // The case that left a gateway supervisor and its 8 children running: GATEWAY_WORKERS=8.
      await failOnPurpose('test/faults/connection-budget.test.ts', 'abandon'),
    ];
    for (const [i, { run, result, output }] of runs.entries()) {
      expect(result.code, output).toBe(1);
      expect(output).toContain('failing on purpose');
      // A failed start-up wait is cleaned up by the harness and the test itself: the teardown finds
      // nothing. A dropped gateway may outlive the test's own clean-up (it is killed when the file
      // ends) and write a key after it (BullMQ's queue meta): then the teardown is the net that lists
      // it, removes it and fails the run, as it must.
      if (i === 0) expect(output).not.toContain('left these behind');
      const left = await findLeftovers(run, stores);
      expect(describeLeftovers(left), `leftovers of run ${run}`).toBe('');
    }
  });
});
