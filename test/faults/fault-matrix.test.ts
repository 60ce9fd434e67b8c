import { afterEach, describe, expect, it } from 'vitest';
import { matrixTable, runMatrixCell, type CellResult, type MatrixCell } from '@flashsale/harness';
import { createIsolatedContext, type TestContext } from '../support/context.ts';

// The fault matrix's smoke row: cells of `npm run chaos -- --matrix` (packages/harness/src/fault-matrix.ts)
// run in the suite, each with its own gateway, two workers and a reconciler behind fault proxies, on a
// database of its own (the reconciler watches every sale of its database).

let ctx: TestContext | undefined;
afterEach(async () => {
  await ctx?.close();
  ctx = undefined;
});

async function cell(of: MatrixCell): Promise<CellResult> {
  ctx = await createIsolatedContext();
  const result = await runMatrixCell(
    {
      redisPort: Number(new URL(ctx.config.REDIS_URL).port || 6379),
      databaseUrl: ctx.config.DATABASE_URL,
      redis: ctx.redis,
      prisma: ctx.prisma,
      adminToken: ctx.config.ADMIN_TOKEN,
      env: { WORKER_CLAIM_IDLE_MS: '2000', RECONCILER_WATCH_MS: '500' },
    },
    of,
  );
  console.info(matrixTable([result]));
  return result;
}

/** The cell held with nothing lost, named or not, and a new buyer bought after. */
function expectExact(result: CellResult) {
  expect(result.broken).toEqual([]);
  expect(result.verdict).toBe('exact');
  expect(result.accepted).toBeGreaterThan(0);
  expect(result.sellsAgainMs).not.toBeNull();
}

describe('the fault matrix, smoke row', () => {
  it('a worker SIGKILLed as it next writes to MySQL, on a plain sale: every 202 an order, nothing doubled, units + remaining = stock, selling on', async () => {
    expectExact(await cell({ fault: 'kill', link: 'worker-mysql', sale: 'plain' }));
  });

  it("a gateway's Redis replies cut mid-way (RST) for 8 s, on a queued sale: the ledger exact, the door selling again after", async () => {
    expectExact(await cell({ fault: 'reset', link: 'gateway-redis', sale: 'queued' }));
  });
});
