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
// (flashsale_mysql_conflicts_total). Here each operation runs on node 1 and, while it holds the row it
// locks, another client writes that row on node 2, as a second writer would during a move between nodes:
// every operation must come out whole, with exactly one conflict counted for each.

let cluster: GaleraCluster;
let ctx: TestContext;
let onOtherNode: Connection;
let onWriter: Connection;
let database: string;
beforeAll(async () => {
  cluster = await startGaleraCluster();
  database = testDatabaseName('galera_conflicts');
  await migrate(cluster.nodes[0]!.url(database));
  ctx = createTestContext({ DATABASE_URL: cluster.nodes[0]!.url(database) });
  const connect = (port: number) => createConnection({ host: '127.0.0.1', port, user: 'root', password: '', database });
  onOtherNode = await connect(cluster.nodes[1]!.port);
  onWriter = await connect(cluster.nodes[0]!.port);
  await installHold(onWriter, cluster.nodes[0]!.port);
});
afterAll(async () => {
  await onOtherNode?.end().catch(() => undefined);
  await onWriter?.end().catch(() => undefined);
  await ctx?.close();
  await cluster?.stop();
});

/** How long an operation holds its row, once the hold is armed: long enough to be seen doing it. */
const HOLD_MS = 400;

/**
 * The hold: triggers (test only) that make the next UPDATE of a sale or order row on node 1 sleep
 * HOLD_MS once the test arms it (`hold_ms` > 0), with the row already locked (InnoDB locks the row
 * before a BEFORE UPDATE trigger runs). The sleeping transaction disarms the hold, so its run after the
 * conflict (its disarming rolled back with it) sleeps once more and commits. Node 2 runs the same
 * triggers (DDL reaches every node) but never sleeps: they test node 1's port.
 */
async function installHold(connection: Connection, writerPort: number): Promise<void> {
  await connection.query('CREATE TABLE test_hold (id INT PRIMARY KEY, hold_ms INT NOT NULL)');
  await connection.query('INSERT INTO test_hold VALUES (1, 0)');
  for (const table of ['sales', 'orders']) {
    await connection.query(`
      CREATE TRIGGER test_hold_${table} BEFORE UPDATE ON ${table} FOR EACH ROW
      BEGIN
        DECLARE ms INT DEFAULT 0;
        IF @@port = ${writerPort} THEN
          SELECT hold_ms INTO ms FROM test_hold WHERE id = 1;
          IF ms > 0 THEN
            UPDATE test_hold SET hold_ms = 0 WHERE id = 1;
            DO SLEEP(ms / 1000);
          END IF;
        END IF;
      END`);
  }
}

/**
 * Runs `operation` (on node 1) so that it meets a write of its locked row committed on node 2: the hold
 * is armed, the operation started, and once node 1 shows it holding (its trigger sleeping) node 2 runs
 * `sql`. Node 1 applies that write-set by aborting the operation's transaction (1213), which must run
 * again. No timing decides it: node 2 writes only while the operation holds the row.
 */
async function meetingWriteOnOtherNode<T>(operation: () => Promise<T>, sql: string, values: unknown[]): Promise<T> {
  await onWriter.query('UPDATE test_hold SET hold_ms = ? WHERE id = 1', [HOLD_MS]);
  let settled = false;
  const running = operation().finally(() => (settled = true));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const [row] = await onWriter.query<{ holding: bigint }[]>(
      "SELECT COUNT(*) AS holding FROM information_schema.PROCESSLIST WHERE DB = ? AND STATE = 'User sleep'",
      [database],
    );
    if (Number(row!.holding) > 0) break;
    if (settled) {
      await running;
      throw new Error('the operation finished without holding its row: the hold (a trigger on its UPDATE) never ran');
    }
    if (Date.now() > deadline) throw new Error('the operation was not seen holding its row within 30 s');
    await sleep(5);
  }
  await onOtherNode.query(sql, values);
  return running;
}

const conflictsOf = (operation: ConflictOperation) => mysqlConflictsSoFar().get(operation) ?? 0;

/** Toggles the sale's name on node 2: a write of the sale row that the batch, a cancel and an expiry lock. */
const TOUCH_SALE_ROW = `UPDATE sales SET name = IF(name = 'a', 'b', 'a') WHERE id = ?`;

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

/** Operations of each kind, each meeting one write on node 2. */
const OPERATIONS = 8;

describe('a conflict with a write on another Galera node, at COMMIT', () => {
  it("runs the worker's batch again: every reservation written once, sold_units exact, the conflict counted", async () => {
    const sale = await createLiveSale(ctx, { stock: 1000 });
    const all = await reservations(sale, OPERATIONS * 5, 'batch');
    const before = conflictsOf('order_batch');
    let written = 0;
    for (let i = 0; i < all.length; i += 5) {
      const batch = all.slice(i, i + 5);
      const outcome = await meetingWriteOnOtherNode(
        () => createOrderStore(ctx.prisma).sale(sale.id).writeOrderBatch(batch),
        TOUCH_SALE_ROW,
        [sale.id],
      );
      written += outcome.written.length;
    }
    expect(written).toBe(all.length);
    expect(await ctx.prisma.order.count({ where: { saleId: sale.id } })).toBe(all.length);
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(all.length);
    expect(conflictsOf('order_batch') - before).toBe(OPERATIONS);
  });

  it('runs a cancel again: every order cancelled once, its units owed back once', async () => {
    const { sale, orders } = await saleWithOrders(OPERATIONS, 'cancel');
    const before = conflictsOf('cancel');
    const outcomes = [];
    for (const order of orders) {
      outcomes.push(
        await meetingWriteOnOtherNode(() => createOrderStore(ctx.prisma).cancelOrder(order.reservationId, order.userId), TOUCH_SALE_ROW, [
          sale.id,
        ]),
      );
    }
    expect(outcomes.every((o) => o?.kind === 'cancelled' && o.owed?.quantity === 1)).toBe(true);
    expect(await ctx.prisma.order.count({ where: { saleId: sale.id, status: 'cancelled' } })).toBe(OPERATIONS);
    expect(await ctx.prisma.stockReturn.count({ where: { saleId: sale.id } })).toBe(OPERATIONS);
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(0);
    expect(conflictsOf('cancel') - before).toBe(OPERATIONS);
  });

  it('runs an expiry pass again: every due order expired once', async () => {
    const { sale } = await saleWithOrders(OPERATIONS * 2, 'expiry');
    await ctx.prisma.$executeRaw`UPDATE orders SET pay_by = NOW(3) - INTERVAL 1 SECOND WHERE sale_id = ${sale.id}`;
    const before = conflictsOf('expiry');
    let expired = 0;
    // Passes of two orders, one transaction each, as the worker's expiry runs them.
    for (let pass = 0; pass < OPERATIONS; pass++) {
      const outcome = await meetingWriteOnOtherNode(
        () => createOrderStore(ctx.prisma).expireDueOrders(2, (saleId) => ctx.store.sale(saleId).heldPayments(), []),
        TOUCH_SALE_ROW,
        [sale.id],
      );
      expired += outcome.owed.length;
    }
    expect(expired).toBe(OPERATIONS * 2);
    expect(await ctx.prisma.order.count({ where: { saleId: sale.id, status: 'expired' } })).toBe(OPERATIONS * 2);
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(0);
    expect(conflictsOf('expiry') - before).toBe(OPERATIONS);
  });

  it('runs a payment again: every order paid once, one outcome per event', async () => {
    const { sale, orders } = await saleWithOrders(OPERATIONS, 'payment');
    const before = conflictsOf('payment');
    const outcomes = [];
    for (const order of orders) {
      // The payment locks the order row: node 2 writes that row (its payBy a second later).
      const payment = { eventId: `evt_${randomUUID()}`, reservationId: order.reservationId, saleId: sale.id, amountCents: 100 };
      outcomes.push(
        await meetingWriteOnOtherNode(
          () => createOrderStore(ctx.prisma).recordPayment(payment),
          'UPDATE orders SET pay_by = pay_by + INTERVAL 1 SECOND WHERE reservation_id = ?',
          [order.reservationId],
        ),
      );
    }
    expect(outcomes.every((o) => o === 'paid')).toBe(true);
    expect(await ctx.prisma.order.count({ where: { saleId: sale.id, status: 'paid' } })).toBe(OPERATIONS);
    expect(await ctx.prisma.paymentEvent.count({ where: { saleId: sale.id } })).toBe(OPERATIONS);
    expect(conflictsOf('payment') - before).toBe(OPERATIONS);
  });
});
