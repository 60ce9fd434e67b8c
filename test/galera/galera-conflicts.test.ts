import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import type { Reservation } from '@flashsale/domain';
import { startGaleraCluster, testDatabaseName, type GaleraCluster } from '@flashsale/harness';
import { createOrderStore, migrate, mysqlConflictsSoFar, type ConflictOperation, type SaleRecord } from '@flashsale/order-store';
import { createLiveSale, createTestContext, type TestContext } from '../support/context.ts';

// A conflict surfaces at COMMIT (or at the next statement) as 1213, after the work was done: a Galera
// node aborts a local transaction whose rows a write-set committed on another node touches, and refuses
// at certification one that lost the race. The system's four writers of shared rows (the worker's batch,
// the expiry pass, payments, cancels) run the transaction again and count it
// (flashsale_mysql_conflicts_total). Here the operations run on node 1 while another client writes the
// very rows they lock on node 2, as two writers would during a move between nodes: every operation must
// come out whole, and the conflicts be counted.

let cluster: GaleraCluster;
let ctx: TestContext;
let onOtherNode: Connection;
beforeAll(async () => {
  cluster = await startGaleraCluster();
  const database = testDatabaseName('galera_conflicts');
  await migrate(cluster.nodes[0]!.url(database));
  ctx = createTestContext({ DATABASE_URL: cluster.nodes[0]!.url(database) });
  onOtherNode = await createConnection({ host: '127.0.0.1', port: cluster.nodes[1]!.port, user: 'root', password: '', database });
});
afterAll(async () => {
  await onOtherNode?.end().catch(() => undefined);
  await ctx?.close();
  await cluster?.stop();
});

/**
 * Writes `sql` on node 2 a few times (WRITES_PER_OPERATION, 5 ms apart) after each operation the test
 * finishes (`done()`), while the next one runs: operations meet writes of their rows, and none can meet
 * one in each of its runs however slow the machine, as each write makes at most one run lose (4 < 8).
 * Node 2's own conflicts are of no interest here.
 */
function writingOnOtherNode(sql: string, values: unknown[]): { done(): void; stop(): Promise<number> } {
  let running = true;
  let writes = 0;
  let budget = 0;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (running) {
      if (budget === 0) await new Promise<void>((resolve) => (wake = resolve));
      if (!running) break;
      budget -= 1;
      await onOtherNode.query(sql, values).then(
        () => (writes += 1),
        () => undefined,
      );
      await sleep(5);
    }
  })();
  return {
    done() {
      budget = WRITES_PER_OPERATION;
      wake?.();
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
      return writes;
    },
  };
}

const WRITES_PER_OPERATION = 4;

const conflictsOf = (operation: ConflictOperation) => mysqlConflictsSoFar().get(operation) ?? 0;

/** Toggles the sale's name on node 2: a write of the sale row that every one of these operations locks. */
const touchSaleRow = (saleId: number) => writingOnOtherNode(`UPDATE sales SET name = IF(name = 'a', 'b', 'a') WHERE id = ?`, [saleId]);

async function reservations(sale: SaleRecord, buyers: number, label: string): Promise<Reservation[]> {
  const out: Reservation[] = [];
  const generation = (await ctx.store.sale(sale.id).state())!.generation;
  for (let i = 0; i < buyers; i++) {
    const request = { saleId: sale.id, userId: `${label}-${i}`, quantity: 1, reservationId: `${sale.id}-${randomUUID()}` };
    expect((await ctx.store.reserve(request)).kind).toBe('reserved');
    out.push({ ...request, reservedAt: Date.now(), generation });
  }
  return out;
}

async function saleWithOrders(buyers: number, label: string): Promise<{ sale: SaleRecord; orders: Reservation[] }> {
  const sale = await createLiveSale(ctx, { stock: 1000, paymentWindowSeconds: 600 });
  const orders = await reservations(sale, buyers, label);
  expect((await createOrderStore(ctx.prisma).sale(sale.id).writeOrderBatch(orders)).written).toHaveLength(buyers);
  return { sale, orders };
}

describe('a conflict with a write on another Galera node, at COMMIT', () => {
  it("runs the worker's batch again: every reservation written once, sold_units exact, the conflicts counted", async () => {
    const sale = await createLiveSale(ctx, { stock: 1000 });
    const all = await reservations(sale, 300, 'batch');
    const before = conflictsOf('order_batch');
    const other = touchSaleRow(sale.id);
    let written = 0;
    for (let i = 0; i < all.length; i += 5) {
      written += (
        await createOrderStore(ctx.prisma)
          .sale(sale.id)
          .writeOrderBatch(all.slice(i, i + 5))
      ).written.length;
      other.done();
    }
    const otherWrites = await other.stop();
    expect(written).toBe(300);
    expect(await ctx.prisma.order.count({ where: { saleId: sale.id } })).toBe(300);
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(300);
    expect(conflictsOf('order_batch') - before).toBeGreaterThan(0);
    console.log(`order batches: ${conflictsOf('order_batch') - before} conflicts run again, against ${otherWrites} writes on node 2`);
  });

  it('runs a cancel again: every order cancelled once, its units owed back once', async () => {
    const { sale, orders } = await saleWithOrders(60, 'cancel');
    const before = conflictsOf('cancel');
    const other = touchSaleRow(sale.id);
    const outcomes = [];
    for (const order of orders) {
      outcomes.push(await createOrderStore(ctx.prisma).cancelOrder(order.reservationId, order.userId));
      other.done();
    }
    await other.stop();
    expect(outcomes.every((o) => o?.kind === 'cancelled' && o.owed?.quantity === 1)).toBe(true);
    expect(await ctx.prisma.order.count({ where: { saleId: sale.id, status: 'cancelled' } })).toBe(60);
    expect(await ctx.prisma.stockReturn.count({ where: { saleId: sale.id } })).toBe(60);
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(0);
    expect(conflictsOf('cancel') - before).toBeGreaterThan(0);
    console.log(`cancels: ${conflictsOf('cancel') - before} conflicts run again`);
  });

  it('runs an expiry pass again: every due order expired once', async () => {
    const { sale } = await saleWithOrders(60, 'expiry');
    await ctx.prisma.$executeRaw`UPDATE orders SET pay_by = NOW(3) - INTERVAL 1 SECOND WHERE sale_id = ${sale.id}`;
    const before = conflictsOf('expiry');
    const other = touchSaleRow(sale.id);
    let expired = 0;
    // Small passes, one transaction each, as the worker's expiry runs them.
    for (let pass = 0; pass < 60 && expired < 60; pass++) {
      const outcome = await createOrderStore(ctx.prisma).expireDueOrders(2, (saleId) => ctx.store.sale(saleId).heldPayments(), []);
      expired += outcome.owed.length;
      other.done();
    }
    await other.stop();
    expect(expired).toBe(60);
    expect(await ctx.prisma.order.count({ where: { saleId: sale.id, status: 'expired' } })).toBe(60);
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(0);
    expect(conflictsOf('expiry') - before).toBeGreaterThan(0);
    console.log(`expiry: ${conflictsOf('expiry') - before} conflicts run again`);
  });

  it('runs a payment again: every order paid once, one outcome per event', async () => {
    const { sale, orders } = await saleWithOrders(60, 'payment');
    const before = conflictsOf('payment');
    // The payment locks the order row: node 2 writes every order row of the sale (a payBy a second later).
    const other = writingOnOtherNode('UPDATE orders SET pay_by = pay_by + INTERVAL 1 SECOND WHERE sale_id = ?', [sale.id]);
    const outcomes = [];
    for (const order of orders) {
      outcomes.push(
        await createOrderStore(ctx.prisma).recordPayment({
          eventId: `evt_${randomUUID()}`,
          reservationId: order.reservationId,
          saleId: sale.id,
          amountCents: 100,
        }),
      );
      other.done();
    }
    await other.stop();
    expect(outcomes.every((o) => o === 'paid')).toBe(true);
    expect(await ctx.prisma.order.count({ where: { saleId: sale.id, status: 'paid' } })).toBe(60);
    expect(await ctx.prisma.paymentEvent.count({ where: { saleId: sale.id } })).toBe(60);
    expect(conflictsOf('payment') - before).toBeGreaterThan(0);
    console.log(`payments: ${conflictsOf('payment') - before} conflicts run again`);
  });
});
