import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import { createTestContext, type TestContext } from '../../../test/support/context.ts';
import { poolConfigFromUrl } from './database-url.ts';
import type { PrismaClient } from './generated/prisma/client.ts';
import { insertSale, type SaleRecord } from './sale-repository.ts';
import { unitsAcceptedBy } from './sale-ledger.ts';

// The audit's MySQL side against the real MariaDB: units in the orders of reservations accepted by an
// instant, less those the audit already counts as in flight.

let ctx: TestContext;
let worker: Connection;
beforeAll(async () => {
  ctx = createTestContext();
  worker = await createConnection(poolConfigFromUrl(ctx.config.DATABASE_URL));
});
afterAll(async () => {
  await worker.end();
  await ctx.close();
});

const AT = Date.UTC(2026, 10, 23, 12, 0, 0, 500);

async function newSale(): Promise<SaleRecord> {
  return insertSale(ctx.prisma, {
    name: 'Units accepted test',
    stock: 100,
    perUserLimit: 5,
    startsAt: new Date(AT - 60_000),
    endsAt: new Date(AT + 3_600_000),
  });
}

/** Writes an order as a worker does, on a connection of its own; returns its reservation id. */
async function writeOrder(sale: SaleRecord, quantity: number, reservedAt: number, status = 'created'): Promise<string> {
  const reservationId = `${sale.id}-${randomUUID()}`;
  await worker.query(
    'INSERT INTO orders (reservation_id, sale_id, user_id, quantity, status, reserved_at, pay_by) VALUES (?, ?, ?, ?, ?, ?, NOW(3))',
    [
      reservationId,
      sale.id,
      `buyer-${randomUUID()}`,
      quantity,
      status,
      new Date(reservedAt).toISOString().replace('T', ' ').replace('Z', ''),
    ],
  );
  return reservationId;
}

describe('unitsAcceptedBy', () => {
  it('sums the live orders reserved by the instant, to the millisecond, leaving out those counted in flight', async () => {
    const sale = await newSale();
    const inFlight = await writeOrder(sale, 2, AT - 1000);
    await writeOrder(sale, 3, AT - 1);
    await writeOrder(sale, 4, AT);
    await writeOrder(sale, 5, AT + 1);
    await writeOrder(sale, 1, AT - 1000, 'cancelled');
    await writeOrder(sale, 1, AT - 1000, 'paid');

    expect(await unitsAcceptedBy(ctx.prisma, sale.id, AT, new Set([inFlight, `${sale.id}-not-an-order`]))).toBe(3 + 4 + 1);
  });

  it('reads every sum at one instant: an order a worker commits in between is in neither the total nor the units taken off', async () => {
    const sale = await newSale();
    await writeOrder(sale, 3, AT - 1000);
    const writtenMeanwhile = `${sale.id}-${randomUUID()}`;
    // A client whose first sum is followed, before the next one, by the worker committing the order of a
    // reservation the audit counts as in flight.
    let committed = false;
    const racing = ctx.prisma.$extends({
      query: {
        order: {
          async aggregate({ args, query }) {
            const result = await query(args);
            if (!committed) {
              committed = true;
              await worker.query(
                "INSERT INTO orders (reservation_id, sale_id, user_id, quantity, status, reserved_at, pay_by) VALUES (?, ?, 'late', 2, 'created', ?, NOW(3))",
                [writtenMeanwhile, sale.id, new Date(AT - 10).toISOString().replace('T', ' ').replace('Z', '')],
              );
            }
            return result;
          },
        },
      },
    }) as unknown as PrismaClient;

    const units = await unitsAcceptedBy(racing, sale.id, AT, new Set([writtenMeanwhile]));

    expect(committed).toBe(true);
    expect(units).toBe(3);
    expect(await unitsAcceptedBy(ctx.prisma, sale.id, AT, new Set([writtenMeanwhile]))).toBe(3);
  });
});
