import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { newReservationId } from '@flashsale/domain';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP } from '@flashsale/redis-store/testing';
import { createPrisma, poolConfigFromUrl } from '@flashsale/order-store';
import { createConnection } from 'mariadb';
import { createLiveSale, createTestContext, salesWith, type TestContext } from '../../../test/support/context.ts';
import { until } from '../../../test/support/until.ts';
import { ledgerOf, ordersOf, pendingCount, startFaultProxy } from '@flashsale/harness';
import { OrderWorker, type OrderWorkerOptions } from './order-worker.ts';

const OPTIONS: OrderWorkerOptions = {
  batchSize: 100,
  idleMs: 5,
  claimIdleMs: 200,
  maxDeliveries: 3,
  salesRefreshMs: 50,
  writesInFlight: 2,
};

let ctx: TestContext;
let workers: OrderWorker[];

beforeEach(() => {
  ctx = createTestContext();
  workers = [];
});
afterEach(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await ctx.close();
});

function startWorker(options: Partial<OrderWorkerOptions> = {}, prisma = ctx.prisma): OrderWorker {
  const worker = new OrderWorker(
    { sales: salesWith(ctx, { prisma }), logger: createLogger('worker-test', 'silent') },
    { ...OPTIONS, ...options },
  );
  workers.push(worker);
  worker.start();
  return worker;
}

async function reserve(saleId: number, userId: string, quantity = 1) {
  const reservationId = newReservationId(saleId);
  const outcome = await ctx.store.reserve({ saleId, userId, quantity, reservationId });
  expect(outcome.kind).toBe('reserved');
  return reservationId;
}

async function readEntries(saleId: number) {
  const entries = (await ctx.redis.xrange(saleKeys(ctx.config.REDIS_PREFIX, saleId).stream, '-', '+')) as [string, string[]][];
  return entries;
}

async function deadLetters(saleId: number) {
  const entries = (await ctx.redis.xrange(saleKeys(ctx.config.REDIS_PREFIX, saleId).deadLetter, '-', '+')) as [string, string[]][];
  return entries.map(
    ([, fields]) =>
      Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : []))) as Record<string, string>,
  );
}

describe('order worker', () => {
  it('turns every reservation of the stream into one order and acknowledges it', async () => {
    const sale = await createLiveSale(ctx, { stock: 50, perUserLimit: 2 });
    const accepted = new Map<string, { userId: string; quantity: number }>();
    for (let i = 0; i < 25; i++) {
      const quantity = (i % 2) + 1;
      accepted.set(await reserve(sale.id, `buyer-${i}`, quantity), { userId: `buyer-${i}`, quantity });
    }
    const worker = startWorker();
    await ctx.store.sale(sale.id).waitForDrain();

    const ledger = await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted);
    expect(ledger).toEqual({ lost: [], duplicated: [], unexpected: [], unitsInDb: 37, remaining: 13, stock: 50 });
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(37);
    expect(worker.stats.written).toBe(25);
    const orders = await ordersOf(ctx.prisma, sale.id);
    expect(orders.every((o) => o.status === 'created')).toBe(true);
    // reserved_at is the time Redis accepted the reservation, to the millisecond.
    const acceptedAt = new Map((await readEntries(sale.id)).map(([, f]) => [f[1], Number(f[7])]));
    expect(orders.map((o) => o.reservedAt.getTime())).toEqual(orders.map((o) => acceptedAt.get(o.reservationId)));
  });

  it('discovers a sale published after it started', async () => {
    startWorker();
    const sale = await createLiveSale(ctx, { stock: 5 });
    const reservationId = await reserve(sale.id, 'late-buyer');
    await ctx.store.sale(sale.id).waitForDrain();
    expect((await ordersOf(ctx.prisma, sale.id)).map((o) => o.reservationId)).toEqual([reservationId]);
  });

  it('acknowledges a redelivered entry whose order exists without writing it again', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const reservationId = await reserve(sale.id, 'a');
    startWorker();
    await ctx.store.sale(sale.id).waitForDrain();
    // The same reservation a second time on the stream: what a redelivery looks like to the writer.
    const [[, fields]] = (await readEntries(sale.id)) as [[string, string[]]];
    await ctx.redis.xadd(saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream, '*', ...fields);
    await ctx.store.sale(sale.id).waitForDrain();

    expect((await ordersOf(ctx.prisma, sale.id)).map((o) => o.reservationId)).toEqual([reservationId]);
    expect(workers[0]!.stats.replayed).toBe(1);
    expect(await deadLetters(sale.id)).toEqual([]);
  });

  it('sets aside a second reservation of a buyer who already has an order, with its reason', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    await reserve(sale.id, 'a');
    // Redis lost its buyer record (a flush) and took a second reservation: MySQL's unique key refuses it.
    await ctx.redis.hdel(saleKeys(ctx.config.REDIS_PREFIX, sale.id).buyers, 'a');
    const second = await reserve(sale.id, 'a');
    startWorker();
    await ctx.store.sale(sale.id).waitForDrain();

    expect((await ordersOf(ctx.prisma, sale.id)).length).toBe(1);
    const dead = await deadLetters(sale.id);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ reason: 'DUPLICATE_BUYER', r: second, u: 'a', q: '1', deliveries: '1' });
    expect((await ctx.store.sale(sale.id).backlog()).deadLettered).toBe(1);
  });

  it('never writes more units than the sale has, even when Redis held too much stock: the reservations past it are set aside, named and counted lost', async () => {
    const sale = await createLiveSale(ctx, { stock: 2 });
    await ctx.redis.hset(saleKeys(ctx.config.REDIS_PREFIX, sale.id).meta, 'remaining', '5');
    const ids = [];
    for (const buyer of ['a', 'b', 'c', 'd']) ids.push(await reserve(sale.id, buyer));
    startWorker();
    await ctx.store.sale(sale.id).waitForDrain();

    expect((await ordersOf(ctx.prisma, sale.id)).map((o) => o.reservationId)).toEqual(ids.slice(0, 2));
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(2);
    expect((await deadLetters(sale.id)).map((d) => [d.r, d.reason])).toEqual([
      [ids[2], 'OVER_STOCK'],
      [ids[3], 'OVER_STOCK'],
    ]);
    // Answered 202 and never to be orders: named and counted lost.
    const named = await ctx.prisma.lostReservation.findMany({ where: { saleId: sale.id }, orderBy: { userId: 'asc' } });
    expect(named.map((l) => [l.reservationId, l.userId, l.reason])).toEqual([
      [ids[2], 'c', 'OVER_STOCK'],
      [ids[3], 'd', 'OVER_STOCK'],
    ]);
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).lostReservations).toBe(2);
  });

  it('names and counts lost the entries of a Redis state since rebuilt (STALE_GENERATION), once however often they come, and sets them aside', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 2 });
    const stale = [await reserve(sale.id, 'ann', 2), await reserve(sale.id, 'bob')];
    // A rebuild replaced the state that accepted them: MySQL's generation switched, as a reconciliation's does.
    await ctx.prisma.sale.update({ where: { id: sale.id }, data: { redisGeneration: 'rebuilt-since' } });
    const entries = await readEntries(sale.id);
    startWorker();
    await ctx.store.sale(sale.id).waitForDrain();
    // Delivered again (written to the stream anew, as a worker that died before setting them aside would see them again).
    for (const [, fields] of entries) await ctx.redis.xadd(saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream, '*', ...fields);
    await ctx.store.sale(sale.id).waitForDrain();

    // Each delivery set aside once (four dead letters: two entries, each delivered twice). A sale's lane runs
    // batches side by side, so the second delivery's two entries may be set aside in either order.
    const setAside = (await deadLetters(sale.id)).map((d) => `${d.r} ${d.reason}`).sort();
    expect(setAside).toEqual([...stale, ...stale].map((r) => `${r} STALE_GENERATION`).sort());
    const named = await ctx.prisma.lostReservation.findMany({ where: { saleId: sale.id }, orderBy: { userId: 'asc' } });
    expect(named.map((l) => [l.reservationId, l.userId, l.quantity, l.reason])).toEqual([
      [stale[0], 'ann', 2, 'STALE_GENERATION'],
      [stale[1], 'bob', 1, 'STALE_GENERATION'],
    ]);
    const row = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } });
    expect({ reservations: row.lostReservations, units: row.lostUnits, soldUnits: row.soldUnits }).toEqual({
      reservations: 2,
      units: 3,
      soldUnits: 0,
    });
    expect(await ordersOf(ctx.prisma, sale.id)).toEqual([]);
  });

  it('names the lost entries once MySQL is back when the connection drops as it names them, not at a redelivery it may not get', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const stale = [await reserve(sale.id, 'ann'), await reserve(sale.id, 'bob')];
    await ctx.prisma.sale.update({ where: { id: sale.id }, data: { redisGeneration: 'rebuilt-since' } });
    // The worker's MySQL through a proxy that drops every connection the first time the naming's
    // statement goes by, and takes connections again 300 ms later.
    let dropped = 0;
    const proxy = await startFaultProxy(Number(new URL(ctx.config.DATABASE_URL).port || 3306), (chunk) => {
      if (dropped > 0 || !chunk.includes('lost_reservations')) return 'forward';
      dropped += 1;
      setImmediate(() => proxy.cut());
      setTimeout(() => proxy.restore(), 300);
      return 'drop';
    });
    const url = new URL(ctx.config.DATABASE_URL);
    url.port = String(proxy.port);
    const prisma = createPrisma(url.toString(), 2);
    try {
      // One delivery only: an entry the naming gave up on would be set aside unnamed at the next one.
      startWorker({ maxDeliveries: 1 }, prisma);
      await ctx.store.sale(sale.id).waitForDrain();

      expect(dropped).toBe(1);
      expect((await deadLetters(sale.id)).map((d) => [d.r, d.reason])).toEqual(stale.map((r) => [r, 'STALE_GENERATION']));
      const named = await ctx.prisma.lostReservation.findMany({ where: { saleId: sale.id }, orderBy: { userId: 'asc' } });
      expect(named.map((l) => [l.reservationId, l.reason])).toEqual(stale.map((r) => [r, 'STALE_GENERATION']));
      const row = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } });
      expect({ reservations: row.lostReservations, units: row.lostUnits }).toEqual({ reservations: 2, units: 2 });
    } finally {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
      await prisma.$disconnect();
      await proxy.close();
    }
  });

  it('sets aside a malformed entry instead of retrying it forever', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
    await ctx.redis.xadd(stream, '*', 'r', 'x', 'q', 'not-a-number');
    // A time no DATETIME holds (year 33658): MySQL would refuse it on every retry.
    await ctx.redis.xadd(stream, '*', 'r', newReservationId(sale.id), 'u', 'b', 'q', '1', 't', '999999999999999', 'g', sale.generation);
    const good = await reserve(sale.id, 'a');
    startWorker();
    await ctx.store.sale(sale.id).waitForDrain();

    expect((await ordersOf(ctx.prisma, sale.id)).map((o) => o.reservationId)).toEqual([good]);
    expect((await deadLetters(sale.id)).map((d) => d.reason)).toEqual(['MALFORMED_ENTRY', 'MALFORMED_ENTRY']);
  });

  it("refuses an entry over the sale's per-user limit, whoever wrote it: no order, no units taken, a dead letter OVER_USER_LIMIT, the rest of its batch written", async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 2 });
    const before = await reserve(sale.id, 'a', 2);
    // Written straight into the stream, past the reserve script that would have refused it.
    const intruder = newReservationId(sale.id);
    await ctx.redis.xadd(
      saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream,
      '*',
      'r',
      intruder,
      'u',
      'intruder',
      'q',
      '5',
      't',
      String(Date.now()),
      'g',
      sale.generation,
    );
    const after = await reserve(sale.id, 'b', 1);
    const worker = startWorker();
    await ctx.store.sale(sale.id).waitForDrain();

    expect((await ordersOf(ctx.prisma, sale.id)).map((o) => [o.reservationId, o.quantity])).toEqual([
      [before, 2],
      [after, 1],
    ]);
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(3);
    expect((await deadLetters(sale.id)).map((d) => [d.r, d.u, d.q, d.reason])).toEqual([[intruder, 'intruder', '5', 'OVER_USER_LIMIT']]);
    // All three came in one batch.
    expect(worker.stats).toEqual({ batches: 1, written: 2, replayed: 0, deadLettered: 1 });
  });

  it('takes over entries a dead consumer left pending, and dead-letters one delivered too often', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const first = await reserve(sale.id, 'a');
    // A consumer that read the entry and died: it stays pending on "ghost".
    await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'ghost', 'COUNT', 10, 'STREAMS', keys.stream, '>');
    const second = await reserve(sale.id, 'b');
    // This one has been delivered (and crashed its consumer) as many times as allowed already.
    await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'ghost', 'COUNT', 10, 'STREAMS', keys.stream, '>');
    const [[poisonId]] = (await ctx.redis.xrange(keys.stream, '-', '+')).slice(1) as [[string, string[]]];
    for (let i = 0; i < OPTIONS.maxDeliveries; i++) await ctx.redis.xclaim(keys.stream, ORDER_WRITERS_GROUP, 'ghost', 0, poisonId);

    startWorker();
    await ctx.store.sale(sale.id).waitForDrain();

    expect((await ordersOf(ctx.prisma, sale.id)).map((o) => o.reservationId)).toEqual([first]);
    const dead = await deadLetters(sale.id);
    expect(dead.map((d) => [d.r, d.reason, d.deliveries])).toEqual([[second, 'MAX_DELIVERIES', String(OPTIONS.maxDeliveries + 2)]]);
  });

  it('two workers on one sale write every reservation exactly once', async () => {
    const sale = await createLiveSale(ctx, { stock: 300 });
    startWorker({ batchSize: 7 });
    startWorker({ batchSize: 11 });
    const accepted = new Map<string, { userId: string; quantity: number }>();
    await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        accepted.set(await reserve(sale.id, `u${i}`), { userId: `u${i}`, quantity: 1 });
      }),
    );
    await ctx.store.sale(sale.id).waitForDrain();
    const ledger = await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted);
    expect(ledger).toEqual({ lost: [], duplicated: [], unexpected: [], unitsInDb: 300, remaining: 0, stock: 300 });
    expect(workers[0]!.stats.written + workers[1]!.stats.written).toBe(300);
  });
});

describe('order worker facing an entry MySQL refuses', () => {
  it('writes the rest of the batch and sets that one entry aside as WRITE_FAILED', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const before = await reserve(sale.id, 'a');
    // A buyer id longer than orders.user_id holds: MySQL refuses it, every time.
    await ctx.redis.xadd(
      saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream,
      '*',
      'r',
      newReservationId(sale.id),
      'u',
      'x'.repeat(80),
      'q',
      '1',
      't',
      String(Date.now()),
      'g',
      sale.generation,
    );
    const after = await reserve(sale.id, 'b');
    startWorker();
    await ctx.store.sale(sale.id).waitForDrain();

    expect((await ordersOf(ctx.prisma, sale.id)).map((o) => o.reservationId)).toEqual([before, after]);
    expect((await deadLetters(sale.id)).map((d) => [d.u, d.reason])).toEqual([['x'.repeat(80), 'WRITE_FAILED']]);
  });
});

describe('order worker facing a sale it cannot write for now', () => {
  it('sets aside the entries of a sale MySQL does not have (SALE_NOT_FOUND) and writes the other sales', async () => {
    const orphan = await createLiveSale(ctx, { stock: 10 });
    const other = await createLiveSale(ctx, { stock: 10 });
    // Live in Redis, gone from MySQL (removed by hand): no entry of it can ever become an order.
    await ctx.prisma.sale.delete({ where: { id: orphan.id } });
    const refused = [await reserve(orphan.id, 'a'), await reserve(orphan.id, 'b')];
    const written = [await reserve(other.id, 'a'), await reserve(other.id, 'b')];
    startWorker();
    await ctx.store.sale(orphan.id).waitForDrain();
    await ctx.store.sale(other.id).waitForDrain();

    expect((await deadLetters(orphan.id)).map((d) => [d.r, d.reason])).toEqual(refused.map((r) => [r, 'SALE_NOT_FOUND']));
    expect((await ordersOf(ctx.prisma, other.id)).map((o) => o.reservationId)).toEqual(written);
  });

  it('goes on writing the other sales while that sale row stays locked, and writes that sale once the lock is gone', async () => {
    const locked = await createLiveSale(ctx, { stock: 10 });
    const other = await createLiveSale(ctx, { stock: 10 });
    // Someone holds the sale's row (an operator's open transaction, say): its batch waits on the lock.
    const holder = await createConnection(poolConfigFromUrl(ctx.config.DATABASE_URL));
    await holder.beginTransaction();
    await holder.query('SELECT id FROM sales WHERE id = ? FOR UPDATE', [locked.id]);
    const waiting = await reserve(locked.id, 'a');
    startWorker();
    await until(
      () => pendingCount(ctx.store, locked.id),
      (n) => n === 1,
    );

    // Each wave must be written while the lock is held: a loop waiting for the locked batch would not.
    const written: string[] = [];
    for (let wave = 0; wave < 5; wave++) {
      written.push(await reserve(other.id, `buyer-${wave}`));
      await ctx.store.sale(other.id).waitForDrain(60_000);
    }
    expect((await ordersOf(ctx.prisma, other.id)).map((o) => o.reservationId)).toEqual(written);
    expect(await ordersOf(ctx.prisma, locked.id)).toEqual([]);

    await holder.rollback();
    await holder.end();
    await ctx.store.sale(locked.id).waitForDrain();
    expect((await ordersOf(ctx.prisma, locked.id)).map((o) => o.reservationId)).toEqual([waiting]);
  });
});

describe('buyer ids', () => {
  it('are told apart byte for byte, as Redis tells them apart: Alice, alice and "alice " are three buyers, and stored as given', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const accepted = new Map<string, { userId: string; quantity: number }>();
    // The last ones travel inside the writer's JSON parameter escaped: quotes, backslashes, control
    // characters, a character outside the BMP.
    const buyers = ['Alice', 'alice', 'alice ', 'rené', 'rene', 'say "hi" \\o/', 'tab\tnew\nline\u0000', '😀'];
    for (const buyer of buyers) accepted.set(await reserve(sale.id, buyer), { userId: buyer, quantity: 1 });
    startWorker();
    await ctx.store.sale(sale.id).waitForDrain();

    expect(await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted)).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      unitsInDb: 8,
      remaining: 2,
      stock: 10,
    });
    expect((await ordersOf(ctx.prisma, sale.id)).map((o) => o.userId).sort()).toEqual([...buyers].sort());
    expect(await deadLetters(sale.id)).toEqual([]);
  });
});
