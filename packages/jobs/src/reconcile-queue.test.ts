import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from 'bullmq';
import { createTestContext, type TestContext } from '../../../test/support/context.ts';
import {
  RECONCILE_QUEUE,
  bullConnection,
  bullPrefix,
  createReconcileJobs,
  enqueueReconcile,
  reconcileJobId,
  reconcileUnfinished,
  type ReconcileJobData,
  type ReconcileJobs,
  type ReconcileResult,
} from './reconcile-queue.ts';

let ctx: TestContext;
let jobs: ReconcileJobs;
beforeAll(async () => {
  ctx = createTestContext();
  jobs = createReconcileJobs(ctx.config.REDIS_URL, ctx.config.REDIS_PREFIX);
  await jobs.events.waitUntilReady();
});
afterAll(async () => {
  await jobs.close();
  await ctx.close();
});

describe('reconcile queue', () => {
  it("keeps a deployment's BullMQ keys under its prefix, in one hash slot", () => {
    expect(bullPrefix('flashsale')).toBe('flashsale:{bull}');
  });

  it('holds one reconciliation per sale: asking again while one waits joins it', async () => {
    const first = await enqueueReconcile(jobs.queue, 7, 'operator');
    const second = await enqueueReconcile(jobs.queue, 7, 'lost');

    expect(first.running).toBe(false);
    expect(second.running).toBe(true);
    expect(second.job.id).toBe(reconcileJobId(7));
    expect(second.job.data).toEqual({ saleId: 7, reason: 'operator' });
    expect(await reconcileUnfinished(jobs.queue, 7)).toBe(true);
    expect(await jobs.queue.getJobCounts('waiting')).toEqual({ waiting: 1 });
  });

  it('queues a new reconciliation of a sale once the previous one finished', async () => {
    const connection = bullConnection(ctx.config.REDIS_URL);
    const worker = new Worker<ReconcileJobData, ReconcileResult>(
      RECONCILE_QUEUE,
      async (job) => ({
        saleId: job.data.saleId,
        remaining: 0,
        buyers: 0,
        tookMs: 0,
        lost: { reservations: 0, units: 0 },
        judgement: 'intact',
      }),
      { connection, prefix: bullPrefix(ctx.config.REDIS_PREFIX) },
    );
    const { job } = await enqueueReconcile(jobs.queue, 8, 'operator');
    await job.waitUntilFinished(jobs.events, 10_000);
    await worker.close();
    connection.disconnect();

    expect(await reconcileUnfinished(jobs.queue, 8)).toBe(false);
    const again = await enqueueReconcile(jobs.queue, 8, 'stale');
    expect(again.running).toBe(false);
    expect(again.job.data).toEqual({ saleId: 8, reason: 'stale' });
    expect(await reconcileUnfinished(jobs.queue, 8)).toBe(true);
  });
});
