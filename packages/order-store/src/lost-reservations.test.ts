import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_REASONS } from '@flashsale/domain';
import { createTestContext, type TestContext } from '../../../test/support/context.ts';
import { insertSale, type SaleRecord } from './sale-repository.ts';
import { isLostRefusal, recordRefusalsLost } from './lost-reservations.ts';

// Against the real MariaDB: the named losses and the sale's count live in two tables, kept together.

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

async function newSale(): Promise<SaleRecord> {
  return insertSale(ctx.prisma, {
    name: 'Lost reservations test',
    stock: 10,
    perUserLimit: 2,
    startsAt: new Date(Date.now() - 60_000),
    endsAt: new Date(Date.now() + 3_600_000),
  });
}

const refused = (sale: SaleRecord, userId: string, quantity = 1, reason: 'STALE_GENERATION' | 'OVER_STOCK' = 'STALE_GENERATION') => ({
  reservation: {
    reservationId: `${sale.id}-${randomUUID()}`,
    saleId: sale.id,
    userId,
    quantity,
    reservedAt: 1_800_000_000_123,
    generation: randomUUID(),
  },
  reason,
});

async function lostOf(saleId: number) {
  const row = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } });
  const named = await ctx.prisma.lostReservation.count({ where: { saleId } });
  return { reservations: row.lostReservations, units: row.lostUnits, named };
}

describe('recordRefusalsLost', () => {
  it('names each, with its buyer, units, reason and time, and counts them', async () => {
    const sale = await newSale();
    const entries = [refused(sale, 'ann', 2), refused(sale, 'bob', 1, 'OVER_STOCK')];

    await recordRefusalsLost(ctx.prisma, sale.id, entries);
    const rows = await ctx.prisma.lostReservation.findMany({ where: { saleId: sale.id }, orderBy: { userId: 'asc' } });
    expect(rows.map((r) => [r.reservationId, r.userId, r.quantity, r.reason, r.reservedAt?.getTime()])).toEqual(
      entries.map(({ reservation: e, reason }) => [e.reservationId, e.userId, e.quantity, reason, e.reservedAt]),
    );
    expect(await lostOf(sale.id)).toEqual({ reservations: 2, units: 3, named: 2 });
  });

  it('counts a reservation named before once, and adds the new ones', async () => {
    const sale = await newSale();
    const first = refused(sale, 'ann', 2);
    await recordRefusalsLost(ctx.prisma, sale.id, [first]);

    await recordRefusalsLost(ctx.prisma, sale.id, [first, refused(sale, 'bob')]);
    expect(await lostOf(sale.id)).toEqual({ reservations: 2, units: 3, named: 2 });
  });

  it('leaves a larger count alone: the rebuild that replaced the state may have counted them already, unnamed', async () => {
    const sale = await newSale();
    await ctx.prisma.sale.update({ where: { id: sale.id }, data: { lostReservations: 5, lostUnits: 7 } });

    await recordRefusalsLost(ctx.prisma, sale.id, [refused(sale, 'ann', 2)]);
    expect(await lostOf(sale.id)).toEqual({ reservations: 5, units: 7, named: 1 });
  });

  it('names nothing for a sale MySQL does not hold, and writes nothing for none', async () => {
    const sale = await newSale();
    await recordRefusalsLost(ctx.prisma, sale.id, []);
    expect(await lostOf(sale.id)).toEqual({ reservations: 0, units: 0, named: 0 });
    await ctx.prisma.sale.delete({ where: { id: sale.id } });

    await recordRefusalsLost(ctx.prisma, sale.id, [refused(sale, 'ann')]);
    expect(await ctx.prisma.lostReservation.count({ where: { saleId: sale.id } })).toBe(0);
  });
});

describe('isLostRefusal', () => {
  it('takes the refusals that leave a 202 with no order and no other order of the buyer, and no other reason', () => {
    expect(DEAD_LETTER_REASONS.filter(isLostRefusal).sort()).toEqual(['OVER_STOCK', 'STALE_GENERATION']);
  });
});
