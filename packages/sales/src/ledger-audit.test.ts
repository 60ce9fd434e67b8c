import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { newReservationId } from '@flashsale/domain';
import { decodeReservation, saleKeys, type StreamEntry, createSaleStore } from '@flashsale/redis-store';
import { createOrderStore, type SaleRecord } from '@flashsale/order-store';
import { createLiveSale, createTestContext, type TestContext } from '../../../test/support/context.ts';
import { auditAndReport, auditSale, type AuditReport } from './ledger-audit.ts';
import { salesDeps } from './testing.ts';

// The audit against the real Redis and MariaDB, each place a unit can be in put there by hand: no worker
// runs, so nothing moves between the steps and each count is exact.

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

const prefix = () => ctx.config.REDIS_PREFIX;
const keysOf = (sale: SaleRecord) => saleKeys(prefix(), sale.id);

async function reserve(sale: SaleRecord, buyer: string, quantity = 1): Promise<void> {
  const outcome = await createSaleStore(ctx.redis, prefix()).reserve({
    saleId: sale.id,
    userId: buyer,
    quantity,
    reservationId: newReservationId(sale.id),
  });
  expect(outcome.kind).toBe('reserved');
}

/** Delivers the sale's new entries to a consumer, as a worker's read does; they stay pending until acknowledged. */
async function deliver(sale: SaleRecord): Promise<StreamEntry[]> {
  const round = await createSaleStore(ctx.redis, prefix()).readNewEntries('audit-test', [sale.id], 100);
  return round.entries.get(sale.id) ?? [];
}

/** Writes delivered entries as orders, as a worker does before it acknowledges them. */
async function writeOrders(sale: SaleRecord, entries: StreamEntry[]): Promise<void> {
  const batch = entries.map((entry) => {
    const decoded = decodeReservation(sale.id, entry.id, entry.fields);
    if (!decoded.ok) throw new Error(`entry ${entry.id} is malformed`);
    return decoded.reservation;
  });
  expect((await createOrderStore(ctx.prisma).sale(sale.id).writeOrderBatch(batch)).written).toHaveLength(batch.length);
}

const ack = (sale: SaleRecord, entries: StreamEntry[]) =>
  createSaleStore(ctx.redis, prefix())
    .sale(sale.id)
    .acknowledge(entries.map((e) => e.id));

/** What an audit counts, less the instant it was read at. */
async function counts(sale: SaleRecord, returned = 0): Promise<Omit<AuditReport, 'at' | 'returnedUnits'> | null> {
  const report = await auditSale(
    salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: createLogger('audit-test', 'silent') }),
    sale.id,
  );
  if (!report) return null;
  const { at, returnedUnits, ...rest } = report;
  expect(at).toBeGreaterThan(0);
  expect(returnedUnits).toBe(returned);
  return rest;
}

describe('auditSale', () => {
  // A sale of 10 with reservations of 1, 2 and 3 units: 6 taken, 4 remaining, wherever the 6 are.
  it.each<[string, (sale: SaleRecord) => Promise<void>, { inFlightUnits: number; deadLetteredUnits: number; unitsInDb: number }]>([
    ['not yet delivered to a worker', async () => undefined, { inFlightUnits: 6, deadLetteredUnits: 0, unitsInDb: 0 }],
    ['delivered, not yet written', async (sale) => void (await deliver(sale)), { inFlightUnits: 6, deadLetteredUnits: 0, unitsInDb: 0 }],
    // The worker died between commit and XACK: in MySQL and still in flight, counted once.
    [
      'written, not yet acknowledged',
      async (sale) => writeOrders(sale, await deliver(sale)),
      { inFlightUnits: 6, deadLetteredUnits: 0, unitsInDb: 0 },
    ],
    [
      'written and acknowledged',
      async (sale) => {
        const entries = await deliver(sale);
        await writeOrders(sale, entries);
        await ack(sale, entries);
      },
      { inFlightUnits: 0, deadLetteredUnits: 0, unitsInDb: 6 },
    ],
    [
      'one written, one set aside as a dead letter, one delivered and pending',
      async (sale) => {
        const [ann, , cy] = await deliver(sale);
        await writeOrders(sale, [ann!]);
        await ack(sale, [ann!]);
        await createSaleStore(ctx.redis, prefix()).sale(sale.id).deadLetter(cy!, 'DUPLICATE_BUYER', 1);
      },
      { inFlightUnits: 2, deadLetteredUnits: 3, unitsInDb: 1 },
    ],
  ])('balances a sale whose reservations are %s: remaining + in flight + dead-lettered + in MySQL = stock', async (_, arrange, where) => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 3 });
    await reserve(sale, 'ann', 1);
    await reserve(sale, 'bob', 2);
    await reserve(sale, 'cy', 3);
    await arrange(sale);
    const remaining = 10 - where.inFlightUnits - where.deadLetteredUnits - where.unitsInDb;

    expect(await counts(sale)).toEqual({ saleId: sale.id, stock: 10, remaining, ...where, drift: 0 });
  });

  it('counts once a reservation that is an order and was set aside as well, by reading the dead letters themselves', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 3 });
    await reserve(sale, 'ann', 1);
    await reserve(sale, 'bob', 2);
    // Bob's batch committed, its worker died before XACK, and his entry was then set aside for its deliveries.
    const [ann, bob] = await deliver(sale);
    await writeOrders(sale, [ann!, bob!]);
    await ack(sale, [ann!]);
    await createSaleStore(ctx.redis, prefix()).sale(sale.id).deadLetter(bob!, 'MAX_DELIVERIES', 6);

    expect(await counts(sale)).toEqual({
      saleId: sale.id,
      stock: 10,
      remaining: 7,
      inFlightUnits: 0,
      deadLetteredUnits: 2,
      unitsInDb: 1,
      drift: 0,
    });
  });

  it('balances dead letters the count does not know of (set aside before it was kept), by reading them', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 3 });
    await reserve(sale, 'ann', 3);
    const [ann] = await deliver(sale);
    await createSaleStore(ctx.redis, prefix()).sale(sale.id).deadLetter(ann!, 'DUPLICATE_BUYER', 1);
    await ctx.redis.hdel(keysOf(sale).rejected, `units:${sale.generation}`);

    expect(await counts(sale)).toEqual({
      saleId: sale.id,
      stock: 10,
      remaining: 7,
      inFlightUnits: 0,
      deadLetteredUnits: 3,
      unitsInDb: 0,
      drift: 0,
    });
  });

  it('balances after an entry over the per-user limit is set aside, whose units were never taken, and without reading the dead letters', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 2 });
    await reserve(sale, 'ann', 2);
    // Written straight into the stream, past the reserve script that would have refused it; a worker
    // sets it aside OVER_USER_LIMIT and writes Ann's order.
    await ctx.redis.xadd(
      keysOf(sale).stream,
      '*',
      'r',
      newReservationId(sale.id),
      'u',
      'intruder',
      'q',
      '5',
      't',
      '1',
      'g',
      sale.generation,
    );
    const [ann, intruder] = await deliver(sale);
    await writeOrders(sale, [ann!]);
    await ack(sale, [ann!]);
    await createSaleStore(ctx.redis, prefix()).sale(sale.id).deadLetter(intruder!, 'OVER_USER_LIMIT', 1);

    expect(await counts(sale)).toEqual({
      saleId: sale.id,
      stock: 10,
      remaining: 8,
      inFlightUnits: 0,
      deadLetteredUnits: 0,
      unitsInDb: 2,
      drift: 0,
    });
    // The kept count balances by itself: the audit's first look is its last.
    expect(await ctx.redis.hget(keysOf(sale).rejected, `units:${sale.generation}`)).toBeNull();
  });

  it('balances orders cancelled since: their units back in remaining, or still owed back to it', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, perUserLimit: 3 });
    await reserve(sale, 'ann', 1);
    await reserve(sale, 'bob', 2);
    await reserve(sale, 'cid', 3);
    const entries = await deliver(sale);
    await writeOrders(sale, entries);
    await ack(sale, entries);
    const reservationOf = (entry: StreamEntry) =>
      (decodeReservation(sale.id, entry.id, entry.fields) as { reservation: { reservationId: string } }).reservation.reservationId;
    // Ann's cancel reached Redis; Bob's is committed in MySQL, its return not applied yet.
    const annCancel = await createOrderStore(ctx.prisma).cancelOrder(reservationOf(entries[0]!), 'ann');
    await createOrderStore(ctx.prisma).cancelOrder(reservationOf(entries[1]!), 'bob');
    if (annCancel?.kind !== 'cancelled' || !annCancel.owed) throw new Error('ann was not cancelled');
    await createSaleStore(ctx.redis, prefix()).sale(sale.id).returnUnits(annCancel.owed.generation, [annCancel.owed]);

    // remaining 4 + 1 of Ann's = 5; MySQL: Cid's 3 live, Ann's 1 and Bob's 2 closed in this state.
    expect(await counts(sale, 1)).toEqual({
      saleId: sale.id,
      stock: 10,
      remaining: 5,
      inFlightUnits: 0,
      deadLetteredUnits: 0,
      unitsInDb: 6,
      drift: 0,
    });
  });

  it("leaves out entries of an earlier generation: they were never taken from this state's stock", async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    await reserve(sale, 'ann');
    await ctx.redis.xadd(
      keysOf(sale).stream,
      '*',
      'r',
      newReservationId(sale.id),
      'u',
      'old',
      'q',
      '4',
      't',
      '1',
      'g',
      'an-earlier-generation',
    );

    expect(await counts(sale)).toEqual({
      saleId: sale.id,
      stock: 10,
      remaining: 9,
      inFlightUnits: 1,
      deadLetteredUnits: 0,
      unitsInDb: 0,
      drift: 0,
    });
  });

  it.each<[string, number]>([
    ['Redis holding 2 units more than it should: drift +2', 2],
    ['a unit gone from Redis that no reservation took: drift -1', -1],
  ])('sees %s, and writes nothing of the sale', async (_, change) => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    await reserve(sale, 'ann');
    await ctx.redis.hincrby(keysOf(sale).meta, 'remaining', change);
    const before = await Promise.all([
      ctx.redis.hgetall(keysOf(sale).meta),
      ctx.redis.hgetall(keysOf(sale).buyers),
      ctx.redis.xlen(keysOf(sale).stream),
    ]);

    expect(await counts(sale)).toEqual({
      saleId: sale.id,
      stock: 10,
      remaining: 9 + change,
      inFlightUnits: 1,
      deadLetteredUnits: 0,
      unitsInDb: 0,
      drift: change,
    });
    expect(
      await Promise.all([
        ctx.redis.hgetall(keysOf(sale).meta),
        ctx.redis.hgetall(keysOf(sale).buyers),
        ctx.redis.xlen(keysOf(sale).stream),
      ]),
    ).toEqual(before);
  });

  it.each<[string, (sale: SaleRecord) => Promise<unknown>]>([
    ['Redis holds no state for', (sale) => ctx.redis.del(keysOf(sale).meta, keysOf(sale).buyers, keysOf(sale).stream)],
    ['Redis lost the stream of', (sale) => ctx.redis.del(keysOf(sale).stream)],
    ['is paused (a reconciliation runs) for', (sale) => ctx.redis.hset(keysOf(sale).meta, 'paused', '1')],
  ])('has nothing to say of a sale %s it', async (_, arrange) => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    await reserve(sale, 'ann');
    await arrange(sale);

    expect(
      await auditSale(salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: createLogger('audit-test', 'silent') }), sale.id),
    ).toBeNull();
  });
});

describe('auditAndReport', () => {
  const reported: (AuditReport & { confirmed: boolean })[] = [];
  const deps = () => ({
    ...salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: createLogger('audit-test', 'silent') }),
    onReport: (report: AuditReport & { confirmed: boolean }) => reported.push(report),
  });

  it('records a balanced ledger as drift 0, unconfirmed', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    await reserve(sale, 'ann', 1);
    reported.length = 0;

    const report = await auditAndReport(deps(), sale.id, 0);

    expect(reported).toEqual([{ ...report, confirmed: false }]);
    expect(await createSaleStore(ctx.redis, prefix()).sale(sale.id).auditRecord()).toMatchObject({ drift: 0, checkedAt: report!.at });
  });

  it('records a drift seen twice in a row as confirmed, with its size', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    await ctx.redis.hincrby(keysOf(sale).meta, 'remaining', 3);
    reported.length = 0;

    const report = await auditAndReport(deps(), sale.id, 0);

    expect(report).toMatchObject({ remaining: 13, drift: 3 });
    expect(reported).toEqual([{ ...report, confirmed: true }]);
    expect(await createSaleStore(ctx.redis, prefix()).sale(sale.id).auditRecord()).toMatchObject({ drift: 3, checkedAt: report!.at });
  });

  it('audits nothing of a sale MySQL does not hold, and records nothing', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    await ctx.prisma.sale.delete({ where: { id: sale.id } });
    reported.length = 0;

    expect(await auditAndReport(deps(), sale.id, 0)).toBeNull();
    expect(reported).toEqual([]);
    expect(await createSaleStore(ctx.redis, prefix()).sale(sale.id).auditRecord()).toBeNull();
  });
});
