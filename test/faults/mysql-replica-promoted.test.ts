import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import { signPaymentEvent } from '@flashsale/domain';
import { buyerToken, createHttpClient, faultLedgerOf, purchaseBurst, startFaultProxy, startMariaDbServer, testDatabaseName, waitForDrain, type FaultProxy, type MariaDbServer } from '@flashsale/harness';
import { createPrisma, migrate, type PrismaClient } from '@flashsale/order-store';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// The proof on real replicated stores: a MariaDB primary with an asynchronous replica (binlog,
// GTID), the system reaching MySQL through one address (a proxy standing for the failover's virtual IP).
// Under a running sale the replica's SQL thread stops, so it falls behind by the commits of more buyers,
// of cancels and of the buyers who took the cancelled units. The replica is promoted, the address moved
// to it and the old primary killed. On the replica the cancelled orders are live again and the later
// orders are gone: the system writes back what it can from Redis's records, and names the rest (the
// stock cannot hold them: OVER_STOCK). Every 202 is an order again or counted and listed; no unit is
// sold twice; the lost buyers' lookups, cancels and payments answer `lost`, 409, refund_due; the
// runbook's `npm run reconcile -- --sale` by hand keeps the count.

const STOCK = 250;
const FIRST = 150;
const SECOND = 100;
const CANCELLED = 20;

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
    const child = spawn('npm', ['run', '--silent', 'reconcile', '--', '--sale', String(saleId)], { env: { ...process.env, ...env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('an asynchronous MySQL replica promoted behind its primary mid-sale', () => {
  it('writes back from Redis what the replica lacks, names what it cannot take (lost, listed, refund_due), sells no unit twice; the runbook command keeps the count', async () => {
    const primary = await startMariaDbServer({ args: ['--server-id=1', '--log-bin=primary-bin', '--binlog-format=ROW'] });
    servers.push(primary);
    const replica = await startMariaDbServer({ args: ['--server-id=2', '--log-bin=replica-bin', '--binlog-format=ROW', '--read-only=1'] });
    servers.push(replica);
    const [onPrimary, onReplica] = [await connectTo(primary), await connectTo(replica)];
    await onReplica.query(`CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port}, MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos`);
    await onReplica.query('START SLAVE');
    const primaryId = await scalar(onPrimary, 'SELECT @@server_id');
    const replicaId = await scalar(onReplica, 'SELECT @@server_id');
    expect(primaryId).not.toBe(replicaId);

    // Every process reaches MySQL through one address, as behind a failover's virtual IP.
    proxy = await startFaultProxy(primary.port);
    const database = testDatabaseName('replica');
    const url = `mysql://root@127.0.0.1:${proxy.port}/${database}`;
    await migrate(primary.url(database));
    prisma = createPrisma(url, 2, 0, { acquireTimeoutMs: 60_000 });
    system = await startSystem({ workers: 2, env: { DATABASE_URL: url, AUDIT_EVERY_MS: '500' } });
    const { ctx, gateways, env } = system;
    const prefix = ctx.config.REDIS_PREFIX;
    const saleId = await system.createSale({ stock: STOCK });
    const admin = createHttpClient(gateways[0]!.url, 1);
    const adminAuth = { headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` } };
    const inReplica = async (n: number) => {
      await until(() => scalar(onPrimary, 'SELECT @@gtid_binlog_pos'), (p) => sequenceOf(p) > 0);
      const target = sequenceOf(await scalar(onPrimary, 'SELECT @@gtid_binlog_pos'));
      await until(() => scalar(onReplica, 'SELECT @@gtid_slave_pos'), (p) => sequenceOf(p) >= target);
      expect(Number(await scalar(onReplica, `SELECT COUNT(*) FROM \`${database}\`.orders WHERE sale_id = ${saleId}`))).toBe(n);
    };

    // The first buyers, their orders on the primary and replicated.
    const first = await purchaseBurst(gateways[0]!.url, saleId, buyers('first', FIRST));
    await waitForDrain(ctx.redis, prefix, saleId);
    await until(() => prisma!.order.count({ where: { saleId } }), (n) => n === FIRST);
    await inReplica(FIRST);

    // The replica stops applying what it receives: from here on it falls behind.
    await onReplica.query('STOP SLAVE SQL_THREAD');
    const second = await purchaseBurst(gateways[0]!.url, saleId, buyers('second', SECOND));
    await waitForDrain(ctx.redis, prefix, saleId);
    await until(() => prisma!.order.count({ where: { saleId } }), (n) => n === FIRST + SECOND);
    const cancelled = [...first.accepted].slice(0, CANCELLED);
    for (const [reservationId, { userId }] of cancelled) {
      const res = await admin.send('POST', `/api/reservations/${reservationId}/cancel`, { headers: { authorization: `Bearer ${buyerToken(userId)}` } });
      expect(res.status).toBe(200);
    }
    // The cancelled units, back on sale, go to new buyers.
    const third = await purchaseBurst(gateways[0]!.url, saleId, buyers('third', CANCELLED));
    await waitForDrain(ctx.redis, prefix, saleId);
    await until(() => prisma!.order.count({ where: { saleId, status: { in: ['created', 'paid'] } } }), (n) => n === STOCK);
    expect([first.accepted.size, second.accepted.size, third.accepted.size]).toEqual([FIRST, SECOND, CANCELLED]);
    const behind = sequenceOf(await scalar(onPrimary, 'SELECT @@gtid_binlog_pos')) - sequenceOf(await scalar(onReplica, 'SELECT @@gtid_slave_pos'));
    expect(behind).toBeGreaterThan(0);

    // The failover: the replica is promoted with what it applied, the address moves to it, the old
    // primary dies.
    await onReplica.query('STOP SLAVE');
    await onReplica.query('RESET SLAVE ALL');
    await onReplica.query('SET GLOBAL read_only = 0');
    proxy.retarget(replica.port);
    await primary.kill('SIGKILL');
    expect(await scalar(onReplica, 'SELECT @@server_id')).toBe(replicaId);

    // On its own: the audit sees MySQL short, a reconciliation writes back what the stock holds and
    // names the rest.
    const losses = () => admin.send('GET', `/api/admin/sales/${saleId}/losses?limit=1000`, adminAuth);
    const listed = await until(losses, (res) => res.status === 200 && (res.body.named as { reservations: number }).reservations > 0, 120_000);
    expect(listed.body).toMatchObject({ lost: { reservations: CANCELLED, units: CANCELLED }, named: { reservations: CANCELLED, units: CANCELLED }, unnamed: { reservations: 0, units: 0 }, nextCursor: null });
    const named = listed.body.reservations as { reservationId: string; userId: string; reason: string }[];
    expect(new Set(named.map((l) => l.reason))).toEqual(new Set(['OVER_STOCK']));

    const accepted = new Map([...first.accepted, ...second.accepted, ...third.accepted]);
    const ledger = await faultLedgerOf(ctx.redis, prisma, prefix, saleId, accepted, new Set());
    // Every 202 is an order again, or named: the ledger's lost are exactly the listed ones.
    expect({ lost: [...ledger.lost].sort(), duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: named.map((l) => l.reservationId).sort(),
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect(named.every((l) => accepted.get(l.reservationId)?.userId === l.userId)).toBe(true);
    const stats = async () => (await admin.send('GET', `/api/admin/sales/${saleId}/stats`, adminAuth)).body;
    await until(stats, (s) => s.consistent === true && s.remaining === 0, 60_000);

    // The lost buyers: lookup, cancel, payment.
    const [lost] = named;
    const asBuyer = { headers: { authorization: `Bearer ${buyerToken(lost!.userId)}` } };
    expect((await admin.send('GET', `/api/reservations/${lost!.reservationId}`, asBuyer)).body).toMatchObject({ status: 'lost', reason: 'OVER_STOCK', orderId: null });
    expect(await admin.send('POST', `/api/reservations/${lost!.reservationId}/cancel`, asBuyer)).toMatchObject({ status: 409, body: { code: 'ORDER_NOT_CANCELLABLE', orderStatus: 'lost' } });
    const raw = JSON.stringify({ id: `evt_${randomUUID()}`, type: 'payment.succeeded', reservationId: lost!.reservationId, amountCents: 1999 });
    const paid = await fetch(`${gateways[0]!.url}/api/payments/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'payment-signature': signPaymentEvent(ctx.config.PAYMENT_WEBHOOK_SECRET, Math.floor(Date.now() / 1000), raw) },
      body: raw,
    });
    expect({ status: paid.status, body: await paid.json() }).toEqual({ status: 200, body: { status: 'refund_due' } });
    // A buyer whose order came back sees it.
    const restored = [...second.accepted, ...third.accepted].find(([id]) => !named.some((l) => l.reservationId === id))!;
    expect((await admin.send('GET', `/api/reservations/${restored[0]}`, { headers: { authorization: `Bearer ${buyerToken(restored[1].userId)}` } })).body).toMatchObject({ status: 'created' });

    // The runbook's command, by hand: nothing more restored or lost, the count kept.
    const byHand = await runbookReconcile(env, saleId);
    expect(byHand.code).toBe(0);
    expect(JSON.parse(byHand.stdout.trim().split('\n').at(-1)!)).toMatchObject({ saleId, remaining: 0, lost: { reservations: 0, units: 0 }, restored: { reservations: 0, units: 0 } });
    expect((await losses()).body).toMatchObject({ lost: { reservations: CANCELLED, units: CANCELLED }, named: { reservations: CANCELLED, units: CANCELLED } });
    expect(await stats()).toMatchObject({ remaining: 0, unitsInDb: STOCK, consistent: true, lost: { reservations: CANCELLED, units: CANCELLED } });
    admin.close();
    console.log(`replica promoted ${behind} GTID commits behind (primary ${primaryId}, replica ${replicaId}); restored ${SECOND + CANCELLED - named.length}, named lost ${named.length}`);
  });
});
