import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import { signPaymentEvent } from '@flashsale/domain';
import {
  buyerToken,
  createHttpClient,
  faultLedgerOf,
  purchaseBurst,
  startFaultProxy,
  startMariaDbServer,
  testDatabaseName,
  type FaultProxy,
  type MariaDbServer,
} from '@flashsale/harness';
import { createPrisma, migrate, type PrismaClient } from '@flashsale/order-store';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// The proof on real replicated stores: a MariaDB primary with an asynchronous replica (binlog,
// GTID), the system reaching MySQL through one address (a proxy standing for the failover's virtual IP).
// Under a running sale the replica's SQL thread stops, so it falls behind by the commits that follow. The
// replica is promoted, the address moved to it and the old primary killed; the system repairs by itself.
//   1. Behind by more buyers, cancels and the buyers of the cancelled units: the cancelled orders are
//      live again on the replica and the later orders are gone. The reconciliation closes the cancelled
//      ones again (Redis gave their units back) and writes the others back: nothing lost.
//   2. Behind past a reconciliation of the sale (MySQL holds the generation before it): the orders taken
//      since cannot be written back (STALE_GENERATION); they are counted and named, and their buyers'
//      lookups, cancels and payments answer lost, 409, refund_due.
// Either way every 202 is an order again or counted and listed, no unit is sold twice, and the runbook's
// `npm run reconcile -- --sale` by hand keeps the count.
//   3. With the audit an hour away: the reconciler, which keeps in Redis the identity of the MySQL server
//      it last saw, finds another server_id and reconciles every live sale at once.

let system: System | undefined;
let servers: MariaDbServer[] = [];
let proxy: FaultProxy | undefined;
let prisma: PrismaClient | undefined;
let connections: Connection[] = [];
afterEach(async () => {
  await system?.stop();
  system = undefined;
  await prisma?.$disconnect();
  prisma = undefined;
  await Promise.all(connections.map((c) => c.end().catch(() => undefined)));
  connections = [];
  await proxy?.close();
  proxy = undefined;
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

async function connectTo(server: MariaDbServer): Promise<Connection> {
  const connection = await createConnection({ host: '127.0.0.1', port: server.port, user: 'root', password: '' });
  // The primary's connection dies with it, on purpose.
  connection.on('error', () => undefined);
  connections.push(connection);
  return connection;
}

async function scalar(connection: Connection, sql: string): Promise<string> {
  const [row] = await connection.query<Record<string, unknown>[]>(sql);
  return String(Object.values(row!)[0]);
}

/** The sequence number of a GTID position of domain 0 (`0-<server>-<seq>`), 0 when empty. */
const sequenceOf = (position: string) => Number(/^0-\d+-(\d+)$/.exec(position)?.[1] ?? 0);

function runbookReconcile(env: NodeJS.ProcessEnv, saleId: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'reconcile', '--', '--sale', String(saleId)], {
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A primary and its replica (GTID), the system on the primary through the moving address, a sale. */
async function replicatedSale(stock: number, env: NodeJS.ProcessEnv = {}) {
  const primary = await startMariaDbServer({ args: ['--server-id=1', '--log-bin=primary-bin', '--binlog-format=ROW'] });
  servers.push(primary);
  const replica = await startMariaDbServer({ args: ['--server-id=2', '--log-bin=replica-bin', '--binlog-format=ROW', '--read-only=1'] });
  servers.push(replica);
  const [onPrimary, onReplica] = [await connectTo(primary), await connectTo(replica)];
  await onReplica.query(
    `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port}, MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos`,
  );
  await onReplica.query('START SLAVE');
  expect(await scalar(onPrimary, 'SELECT @@server_id')).not.toBe(await scalar(onReplica, 'SELECT @@server_id'));

  proxy = await startFaultProxy(primary.port);
  const database = testDatabaseName('replica');
  const url = `mysql://root@127.0.0.1:${proxy.port}/${database}`;
  await migrate(primary.url(database));
  prisma = createPrisma(url, 2, 0, { acquireTimeoutMs: 60_000 });
  system = await startSystem({ workers: 2, env: { DATABASE_URL: url, AUDIT_EVERY_MS: '500', ...env } });
  const saleId = await system.createSale({ stock });
  const admin = createHttpClient(system.gateways[0]!.url, 1);
  const adminAuth = { headers: { authorization: `Bearer ${system.ctx.config.ADMIN_TOKEN}` } };
  const db = prisma;
  const gateway = system.gateways[0]!.url;
  const store = system.ctx.store;
  return {
    saleId,
    admin,
    adminAuth,
    env: system.env,
    /** A burst of buyers, drained and written (to the primary) before it returns. */
    async buy(label: string, n: number, ordersAfter: number) {
      const burst = await purchaseBurst(gateway, saleId, buyers(label, n));
      await store.sale(saleId).waitForDrain();
      await until(
        () => db.order.count({ where: { saleId } }),
        (count) => count === ordersAfter,
      );
      return burst;
    },
    /** Waits until the replica has applied all the primary has, and holds `orders` of the sale. */
    async caughtUp(orders: number) {
      const target = sequenceOf(await scalar(onPrimary, 'SELECT @@gtid_binlog_pos'));
      await until(
        () => scalar(onReplica, 'SELECT @@gtid_slave_pos'),
        (p) => sequenceOf(p) >= target,
      );
      expect(Number(await scalar(onReplica, `SELECT COUNT(*) FROM \`${database}\`.orders WHERE sale_id = ${saleId}`))).toBe(orders);
    },
    /** The replica stops applying what it receives. */
    stopApplying: () => onReplica.query('STOP SLAVE SQL_THREAD'),
    /** The failover: the replica promoted with what it applied, the address moved, the old primary dead. Returns how far behind it was. */
    async promote() {
      const behind =
        sequenceOf(await scalar(onPrimary, 'SELECT @@gtid_binlog_pos')) - sequenceOf(await scalar(onReplica, 'SELECT @@gtid_slave_pos'));
      await onReplica.query('STOP SLAVE');
      await onReplica.query('RESET SLAVE ALL');
      await onReplica.query('SET GLOBAL read_only = 0');
      proxy!.retarget(replica.port);
      await primary.kill('SIGKILL');
      return behind;
    },
    losses: () => admin.send('GET', `/api/admin/sales/${saleId}/losses?limit=1000`, adminAuth),
    stats: async () => (await admin.send('GET', `/api/admin/sales/${saleId}/stats`, adminAuth)).body,
    lookUp: async (reservationId: string, userId: string) =>
      (await admin.send('GET', `/api/reservations/${reservationId}`, { headers: { authorization: `Bearer ${buyerToken(userId)}` } })).body,
    cancel: (reservationId: string, userId: string) =>
      admin.send('POST', `/api/reservations/${reservationId}/cancel`, { headers: { authorization: `Bearer ${buyerToken(userId)}` } }),
  };
}

function pay(reservationId: string): Promise<Response> {
  const raw = JSON.stringify({ id: `evt_${randomUUID()}`, type: 'payment.succeeded', reservationId, amountCents: 1999 });
  return fetch(`${system!.gateways[0]!.url}/api/payments/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'payment-signature': signPaymentEvent(system!.ctx.config.PAYMENT_WEBHOOK_SECRET, Math.floor(Date.now() / 1000), raw),
    },
    body: raw,
  });
}

describe('an asynchronous MySQL replica promoted behind its primary mid-sale', () => {
  it('closes again the cancels it lost and writes back the orders it lacks from Redis: nothing lost, no unit sold twice; the runbook command keeps the count', async () => {
    const STOCK = 250;
    const sale = await replicatedSale(STOCK);
    const first = await sale.buy('first', 150, 150);
    await sale.caughtUp(150);

    await sale.stopApplying();
    const second = await sale.buy('second', 100, 250);
    const cancelled = [...first.accepted].slice(0, 20);
    for (const [reservationId, { userId }] of cancelled) expect((await sale.cancel(reservationId, userId)).status).toBe(200);
    // The cancelled units, back on sale, go to new buyers.
    const third = await sale.buy('third', 20, 270);
    expect([first.accepted.size, second.accepted.size, third.accepted.size]).toEqual([150, 100, 20]);
    const behind = await sale.promote();
    expect(behind).toBeGreaterThan(0);

    // On its own: the audit sees MySQL short, a reconciliation closes and writes back.
    await until(
      () => prisma!.order.count({ where: { saleId: sale.saleId } }),
      (n) => n === 270,
      120_000,
    );
    await until(sale.stats, (s) => s.consistent === true && s.remaining === 0 && s.unitsInDb === STOCK, 60_000);
    const accepted = new Map([...first.accepted, ...second.accepted, ...third.accepted]);
    const ledger = await faultLedgerOf(system!.ctx.store, prisma!, sale.saleId, accepted, new Set());
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect((await sale.losses()).body).toMatchObject({
      lost: { reservations: 0, units: 0 },
      named: { reservations: 0, units: 0 },
      reservations: [],
    });
    const [cancelledId, canceller] = cancelled[0]!;
    expect(await sale.lookUp(cancelledId, canceller.userId)).toMatchObject({ status: 'cancelled' });
    const [thirdId, thirdBuyer] = [...third.accepted][0]!;
    expect(await sale.lookUp(thirdId, thirdBuyer.userId)).toMatchObject({ status: 'created' });

    const byHand = await runbookReconcile(sale.env, sale.saleId);
    expect(byHand.code).toBe(0);
    expect(JSON.parse(byHand.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      saleId: sale.saleId,
      remaining: 0,
      lost: { reservations: 0, units: 0 },
      restored: { reservations: 0, units: 0 },
    });
    expect(await sale.stats()).toMatchObject({ remaining: 0, unitsInDb: STOCK, consistent: true, lost: { reservations: 0, units: 0 } });
    sale.admin.close();
    console.log(`replica promoted ${behind} GTID transactions behind: 20 cancels closed again, 120 orders written back, nothing lost`);
  });

  it('with the audit an hour away: the reconciler sees another server_id than Redis remembers and reconciles every live sale (reason mysql_changed); the orders come back', async () => {
    const sale = await replicatedSale(250, { AUDIT_EVERY_MS: '3600000' });
    // The reconciler has recorded the primary's identity in Redis.
    await until(
      () => system!.ctx.store.lastSeenMysqlServer(),
      (seen) => seen === 'server_id=1',
    );
    const first = await sale.buy('first', 150, 150);
    await sale.caughtUp(150);
    await sale.stopApplying();
    const second = await sale.buy('second', 100, 250);
    expect(await sale.promote()).toBeGreaterThan(0);

    await until(
      () => prisma!.order.count({ where: { saleId: sale.saleId } }),
      (n) => n === 250,
      120_000,
    );
    const accepted = new Map([...first.accepted, ...second.accepted]);
    const ledger = await faultLedgerOf(system!.ctx.store, prisma!, sale.saleId, accepted, new Set());
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    const rebuilt = await until(
      async () =>
        system!.reconciler!.logs.find((line) => line.msg === 'reconcile: sale rebuilt and resumed' && line.saleId === sale.saleId),
      (line) => line !== undefined,
    );
    expect(rebuilt).toMatchObject({ reason: 'mysql_changed', restored: { reservations: 100, units: 100 } });
    expect(await system!.ctx.store.lastSeenMysqlServer()).toBe('server_id=2');
    sale.admin.close();
  });

  it('past a reconciliation of the sale: names what it cannot take back (lost, listed, 409, refund_due), sells no unit twice; the runbook command keeps the count', async () => {
    const STOCK = 270;
    const sale = await replicatedSale(STOCK);
    const first = await sale.buy('first', 150, 150);
    await sale.caughtUp(150);

    await sale.stopApplying();
    const second = await sale.buy('second', 100, 250);
    // An operator's reconciliation on the primary: a new generation the replica never hears of.
    expect((await sale.admin.send('POST', `/api/admin/sales/${sale.saleId}/reconcile`, sale.adminAuth)).status).toBe(200);
    const third = await sale.buy('third', 20, 270);
    expect([first.accepted.size, second.accepted.size, third.accepted.size]).toEqual([150, 100, 20]);
    const behind = await sale.promote();
    expect(behind).toBeGreaterThan(0);

    // On its own: the watch sees Redis of another generation than MySQL's, the reconciliation names
    // what MySQL cannot take back.
    const listed = await until(
      sale.losses,
      (res) => res.status === 200 && (res.body.lost as { reservations: number }).reservations > 0,
      120_000,
    );
    expect(listed.body).toMatchObject({
      lost: { reservations: 120, units: 120 },
      named: { reservations: 120, units: 120 },
      unnamed: { reservations: 0, units: 0 },
      nextCursor: null,
    });
    const named = listed.body.reservations as { reservationId: string; userId: string; reason: string }[];
    expect(new Set(named.map((l) => l.reason))).toEqual(new Set(['STALE_GENERATION']));

    const accepted = new Map([...first.accepted, ...second.accepted, ...third.accepted]);
    const ledger = await faultLedgerOf(system!.ctx.store, prisma!, sale.saleId, accepted, new Set());
    // Every 202 is an order, or named: the ledger's lost are exactly the listed ones, with their buyers.
    expect({
      lost: [...ledger.lost].sort(),
      duplicated: ledger.duplicated,
      unexpected: ledger.unexpected,
      oversold: ledger.oversold,
    }).toEqual({
      lost: named.map((l) => l.reservationId).sort(),
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect(named.every((l) => accepted.get(l.reservationId)?.userId === l.userId)).toBe(true);
    await until(sale.stats, (s) => s.consistent === true && s.remaining === 120, 60_000);

    const [lost] = named;
    expect(await sale.lookUp(lost!.reservationId, lost!.userId)).toMatchObject({
      status: 'lost',
      reason: 'STALE_GENERATION',
      orderId: null,
    });
    expect(await sale.cancel(lost!.reservationId, lost!.userId)).toMatchObject({
      status: 409,
      body: { code: 'ORDER_NOT_CANCELLABLE', orderStatus: 'lost' },
    });
    const paid = await pay(lost!.reservationId);
    expect({ status: paid.status, body: await paid.json() }).toEqual({ status: 200, body: { status: 'refund_due' } });

    const byHand = await runbookReconcile(sale.env, sale.saleId);
    expect(byHand.code).toBe(0);
    expect(JSON.parse(byHand.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      saleId: sale.saleId,
      remaining: 120,
      lost: { reservations: 0, units: 0 },
      restored: { reservations: 0, units: 0 },
    });
    expect((await sale.losses()).body).toMatchObject({ lost: { reservations: 120, units: 120 }, named: { reservations: 120, units: 120 } });
    expect(await sale.stats()).toMatchObject({ remaining: 120, unitsInDb: 150, consistent: true, lost: { reservations: 120, units: 120 } });
    sale.admin.close();
    console.log(
      `replica promoted ${behind} GTID transactions behind, past a reconciliation: 120 named lost (STALE_GENERATION), no unit sold twice`,
    );
  });
});
