import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { newReservationId } from '@flashsale/domain';
import { reserveArgs, saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP, toReserveOutcome } from '@flashsale/redis-store/testing';
import { createOrderStore, type PrismaClient } from '@flashsale/order-store';
import { ledgerOf } from '@flashsale/harness';
import { createLiveSale, isolatedContextPerTest } from '../../../test/support/context.ts';
import { startReconciler } from '../../../test/support/reconciler.ts';
import { until } from '../../../test/support/until.ts';
import { OrderWorker } from '../../worker/src/order-worker.ts';
import { salesDeps, type SaleWatch } from '@flashsale/sales/testing';
import { watchOnce } from '../../../test/support/watch-once.ts';

const env = isolatedContextPerTest();

function startWorker(batchSize = 20): OrderWorker {
  const worker = new OrderWorker(
    { sales: env.ctx.sales, logger: createLogger('w', 'silent') },
    { batchSize, idleMs: 5, claimIdleMs: 500, maxDeliveries: 5, salesRefreshMs: 50, writesInFlight: 2 },
  );
  worker.start();
  env.stops.push(() => worker.stop());
  return worker;
}

async function reserveMany(saleId: number, from: number, count: number, accepted: Map<string, { userId: string; quantity: number }>) {
  for (let i = from; i < from + count; i++) {
    const reservationId = newReservationId(saleId);
    const outcome = await env.ctx.store.reserve({
      saleId,
      userId: `buyer-${i}`,
      quantity: 1,
      reservationId,
    });
    expect(outcome.kind).toBe('reserved');
    accepted.set(reservationId, { userId: `buyer-${i}`, quantity: 1 });
  }
}

function watcherDeps(prisma: PrismaClient = env.ctx.prisma): SaleWatch & { requested: [number, string][] } {
  const requested: [number, string][] = [];
  return {
    ...salesDeps({ saleStore: env.ctx.store, prisma, logger: createLogger('watch-test', 'silent') }),
    publishGraceMs: 0,
    createGraceMs: 30_000,
    retentionMs: 0,
    watchAfterEndMs: env.ctx.config.RECONCILER_WATCH_AFTER_END_MS,
    retireAfterEndMs: env.ctx.config.RECONCILER_RETIRE_AFTER_END_MS,
    requested,
    requestReconcile: async (saleId, reason) => {
      requested.push([saleId, reason]);
    },
  };
}

describe('stream retention', () => {
  it('trims what the workers acknowledged up to the last checkpoint, and never mistakes it for Redis going back', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 500 });
    const stream = saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).stream;
    startWorker();
    const reconciler = await startReconciler(env.ctx, { watchEveryMs: 50, streamRetentionMs: 0 });
    env.stops.push(reconciler.stop);
    const accepted = new Map<string, { userId: string; quantity: number }>();

    for (let round = 0; round < 5; round++) {
      await reserveMany(sale.id, round * 60, 60, accepted);
      await env.ctx.store.sale(sale.id).waitForDrain();
    }
    // Passes after the last drain: the checkpoint catches up with the last entry, and the stream is
    // trimmed to it: exactly one entry, the checkpoint's own.
    const entries = await until(
      async () => ((await env.ctx.redis.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id),
      (ids) => ids.length === 1,
    );
    const record = await env.ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } });

    expect(entries).toEqual([record.checkpointStreamId]);
    expect(await ledgerOf(env.ctx.store, env.ctx.prisma, sale.id, accepted)).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      unitsInDb: 300,
      remaining: 200,
      stock: 500,
    });
    // Never taken for Redis going back: no reconciliation queued, run or recorded.
    expect(reconciler.reconciled).toEqual([]);
    expect(await reconciler.jobs.queue.getJobCounts()).toMatchObject({ waiting: 0, active: 0, delayed: 0, completed: 0, failed: 0 });
    expect([record.redisGeneration, record.lostReservations]).toEqual([sale.generation, 0]);
    expect(await env.ctx.store.sale(sale.id).state()).toMatchObject({
      paused: false,
      remaining: 200,
    });
  });

  it('keeps acknowledged entries for the retention time', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 500 });
    const stream = saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).stream;
    startWorker();
    const deps = watcherDeps();
    const accepted = new Map<string, { userId: string; quantity: number }>();
    for (let round = 0; round < 3; round++) {
      await reserveMany(sale.id, round * 20, 20, accepted);
      await env.ctx.store.sale(sale.id).waitForDrain();
      await watchOnce({ ...deps, retentionMs: 600_000 });
    }

    expect(await env.ctx.redis.xlen(stream)).toBe(60);
    await watchOnce({ ...deps, retentionMs: 0 });
    expect(await env.ctx.redis.xlen(stream)).toBe(1);
  });

  it('retention keeps the stream bounded under a steady accept rate', { timeout: 60_000 }, async () => {
    // 2,000 reservations a second for 5 s, a worker writing them, and a pass every 250 ms as the watcher
    // makes it: keep from the checkpoint the pass before recorded (the stream's last entry then), keep
    // everything younger than ten minutes, but no more than 1,000 entries for their age.
    const [perTick, tickMs, ticks, passEvery, maxEntries] = [100, 50, 100, 5, 1_000];
    const prefix = env.ctx.config.REDIS_PREFIX;
    const sale = await createLiveSale(env.ctx, { stock: perTick * ticks });
    const keys = saleKeys(prefix, sale.id);
    startWorker(100);
    const accepted = new Map<string, { userId: string; quantity: number }>();
    const passes: { length: number; bound: number; inFlight: number }[] = [];
    let checkpoint: string | null = null;

    const pass = async () => {
      // What may stay, read before the trim: entries are only added by this test's own loop, which waits
      // for the pass, and the worker only moves the first pending and undelivered entries later.
      const before = await env.ctx.redis
        .multi()
        .time()
        .xpending(keys.stream, ORDER_WRITERS_GROUP)
        .xinfo('GROUPS', keys.stream)
        .xrevrange(keys.stream, '+', '-', 'COUNT', 1)
        .exec();
      const [now, pending, groups, last] = before!.map(([, reply]) => reply) as [
        [string, string],
        [number, string | null],
        unknown[][],
        [string, string[]][],
      ];
      const group = Object.fromEntries(pairs(groups[0]!));
      // The oldest of: the first undelivered entry, the first pending one, the checkpoint's.
      const keptFrom = [nextId(String(group['last-delivered-id'])), pending[1], checkpoint]
        .filter((id): id is string => id !== null)
        .reduce((a, b) => (compareIds(a, b) <= 0 ? a : b));

      await env.ctx.store
        .sale(sale.id)
        .trimAcknowledged({ keepFrom: checkpoint, keepSinceMs: Number(now[0]) * 1000 - 600_000, maxEntries });

      const after = await env.ctx.redis.multi().xlen(keys.stream).xrange(keys.stream, keptFrom, '+').exec();
      const [length, held] = after!.map(([, reply]) => reply) as [number, unknown[]];
      passes.push({ length, bound: Math.max(maxEntries, held.length), inFlight: Number(group.lag) + Number(group.pending) });
      checkpoint = last[0]?.[0] ?? null;
    };

    const started = performance.now();
    for (let tick = 0; tick < ticks; tick++) {
      await sleep(Math.max(0, started + tick * tickMs - performance.now()));
      const batch = Array.from({ length: perTick }, (_, k) => ({
        userId: `buyer-${tick * perTick + k}`,
        reservationId: newReservationId(sale.id),
      }));
      const replies = await env.ctx.redis
        .pipeline(batch.map(({ userId, reservationId }) => ['reserve', ...reserveArgs(keys, userId, 1, reservationId)]))
        .exec();
      replies!.forEach(([error, reply], k) => {
        expect(error).toBeNull();
        expect(toReserveOutcome(reply as [number, string | number]).kind).toBe('reserved');
        accepted.set(batch[k]!.reservationId, { userId: batch[k]!.userId, quantity: 1 });
      });
      if (tick % passEvery === passEvery - 1) await pass();
    }

    // Ten minutes of age would keep all 10,000: the count bound held the stream to about what was in
    // flight plus the entries since the checkpoint, at every pass.
    expect(passes.filter(({ length, bound }) => length > bound)).toEqual([]);
    expect(Math.max(...passes.map(({ length }) => length))).toBeLessThan(accepted.size / 2);
    await env.ctx.store.sale(sale.id).waitForDrain();
    expect(await ledgerOf(env.ctx.store, env.ctx.prisma, sale.id, accepted)).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      unitsInDb: 10_000,
      remaining: 0,
      stock: 10_000,
    });
  });

  it('a reconciler that listed the sale before another recorded a newer checkpoint and trimmed judges it healthy', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 500 });
    startWorker();
    const accepted = new Map<string, { userId: string; quantity: number }>();
    const first = watcherDeps();
    await reserveMany(sale.id, 0, 30, accepted);
    await env.ctx.store.sale(sale.id).waitForDrain();
    await watchOnce(first);
    // What a second reconciler read at this moment: the sale with the checkpoint just recorded.
    const staleRows = await env.ctx.prisma.sale.findMany({ where: { id: sale.id } });
    expect(staleRows[0]!.checkpointStreamId).not.toBeNull();

    // The first goes on: two more checkpoints, and the stream trimmed past the one the second holds.
    for (const from of [30, 60]) {
      await reserveMany(sale.id, from, 30, accepted);
      await env.ctx.store.sale(sale.id).waitForDrain();
      await watchOnce(first);
    }
    const stream = saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).stream;
    expect(await env.ctx.redis.xrange(stream, staleRows[0]!.checkpointStreamId!, staleRows[0]!.checkpointStreamId!)).toEqual([]);

    // The second's pass, with its list read before all that (the same rows MySQL returned then).
    const second = watcherDeps(listingFrom(env.ctx.prisma, staleRows));
    const verdicts = await watchOnce(second);

    expect(verdicts.get(sale.id)).toEqual({ kind: 'healthy' });
    expect([...first.requested, ...second.requested]).toEqual([]);
  });

  it('a checkpoint replaces only the one it was judged against, whatever the clocks say', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 10 });
    const read = async () => {
      const row = await env.ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } });
      return [row.checkpointReservations, row.checkpointStreamId];
    };
    const first = { reservations: 5, units: 5, at: 2_000_000, streamId: '2000000-0' };
    expect(await createOrderStore(env.ctx.prisma).sale(sale.id).recordCheckpoint(sale.generation, first, null)).toBe(true);

    // A reconciler that judged against no checkpoint, or against one since replaced, is refused: with a
    // later clock, the same one, or an earlier one.
    for (const at of [3_000_000, 2_000_000, 1_000_000]) {
      expect(
        await createOrderStore(env.ctx.prisma)
          .sale(sale.id)
          .recordCheckpoint(sale.generation, { reservations: 1, units: 1, at, streamId: `${at}-9` }, null),
      ).toBe(false);
      expect(
        await createOrderStore(env.ctx.prisma)
          .sale(sale.id)
          .recordCheckpoint(sale.generation, { reservations: 1, units: 1, at, streamId: `${at}-9` }, { at: 1_500_000 }),
      ).toBe(false);
    }
    expect(await read()).toEqual([5, '2000000-0']);
    // Judged against the one in place: recorded, even with a clock that went back.
    expect(
      await createOrderStore(env.ctx.prisma)
        .sale(sale.id)
        .recordCheckpoint(sale.generation, { reservations: 6, units: 6, at: 1_900_000, streamId: '1900000-0' }, first),
    ).toBe(true);
    expect(await read()).toEqual([6, '1900000-0']);
    // Never for another generation.
    expect(
      await createOrderStore(env.ctx.prisma)
        .sale(sale.id)
        .recordCheckpoint('another-generation', { reservations: 7, units: 7, at: 4_000_000, streamId: '4000000-0' }, { at: 1_900_000 }),
    ).toBe(false);
  });
});

function pairs(flat: unknown[]): [string, unknown][] {
  const result: [string, unknown][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) result.push([String(flat[i]), flat[i + 1]]);
  return result;
}

/** Stream ids in order: by time, then by sequence. */
function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am === bm ? Number(as - bs) : Number(am - bm);
}

/** The smallest id after `id`. */
function nextId(id: string): string {
  const [ms, seq] = id.split('-') as [string, string];
  return `${ms}-${BigInt(seq) + 1n}`;
}

/** The real client, except that listing sales returns rows read earlier: a reconciler whose list is old. */
function listingFrom(prisma: PrismaClient, rows: Awaited<ReturnType<PrismaClient['sale']['findMany']>>): PrismaClient {
  const sale = new Proxy(prisma.sale, {
    get: (target, property): unknown => (property === 'findMany' ? async () => rows : Reflect.get(target, property)),
  });
  return new Proxy(prisma, { get: (target, property): unknown => (property === 'sale' ? sale : Reflect.get(target, property)) });
}
