import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import type { Reservation } from '@flashsale/domain';
import { startGaleraCluster, testDatabaseName, type GaleraCluster } from '@flashsale/harness';
import { createOrderStore, createPrisma, judgeMysqlServer, migrate, type PrismaClient, type SaleRecord } from '@flashsale/order-store';
import { until } from '../support/until.ts';

// What `wsrep_sync_wait` protects (cluster-reads.ts, mysql-identity.ts): a read on the node the writer has
// just moved to, of what the old writer committed. Node 1 writes; node 2, the node HAProxy moves the
// writer to, reads. Node 2's applier is held by FLUSH TABLES WITH READ LOCK (Galera pauses the node's
// replication while it is held: the write-sets arrive, none is applied), so node 2 is behind by exactly
// the writes made meanwhile, however fast or slow the machine. The lock is let go only once the read has
// answered or is seen in node 2's process list waiting on its wsrep_sync_wait statement (or on the lock
// itself, a rebuild about to write what it read): a read without the wait reads node 2 behind, every time.

const STOCK = 100;
const ORDERS = 5;

let cluster: GaleraCluster;
let onFirst: PrismaClient;
let onSecond: PrismaClient;
const opened: Connection[] = [];
beforeAll(async () => {
  cluster = await startGaleraCluster();
  const database = testDatabaseName('galera_reads');
  await migrate(cluster.nodes[0]!.url(database));
  onFirst = createPrisma(cluster.nodes[0]!.url(database), 2);
  onSecond = createPrisma(cluster.nodes[1]!.url(database), 2);
});
afterAll(async () => {
  await Promise.all(opened.map((c) => c.end().catch(() => c.destroy())));
  await onFirst?.$disconnect();
  await onSecond?.$disconnect();
  await cluster?.stop();
});

async function connectToSecond(): Promise<Connection> {
  const connection = await createConnection({ host: '127.0.0.1', port: cluster.nodes[1]!.port, user: 'root', password: '' });
  connection.on('error', () => undefined);
  opened.push(connection);
  return connection;
}

/**
 * Runs `write` on node 1 with node 2's applier held, then `read` on node 2; lets the applier go once the
 * read has answered or is seen waiting on its wsrep_sync_wait statement, and returns what it read. A
 * read seen instead waiting on the held lock itself went on without waiting for the cluster (a rebuild
 * about to lock the sale row): refused, naming the statement, since after the lock is let go it would
 * race the applier.
 */
async function readOnSecondBehind<T>(write: () => Promise<void>, read: () => Promise<T>): Promise<T> {
  const lock = await connectToSecond();
  await lock.query('FLUSH TABLES WITH READ LOCK');
  let reading: Promise<{ value: T } | { error: unknown }> | undefined;
  let seen: { statement: string; state: string } | undefined;
  try {
    await write();
    let answered = false;
    reading = read().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    void reading.then(() => (answered = true));
    const waiting = async () => {
      const rows = await lock.query<{ INFO: string | null; STATE: string }[]>(
        "SELECT INFO, STATE FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND USER = 'root' AND INFO IS NOT NULL",
      );
      const row = rows.find((r) => r.INFO!.includes('wsrep_sync_wait')) ?? rows.find((r) => /backup lock|global read lock/.test(r.STATE));
      seen = row && { statement: row.INFO!, state: row.STATE };
      return seen !== undefined;
    };
    await until(
      async () => answered || (await waiting()),
      (done) => done,
      60_000,
    ).catch((error: unknown) => {
      throw new Error('the read on node 2 neither answered nor was seen waiting (on wsrep_sync_wait or the read lock)', { cause: error });
    });
  } finally {
    await lock.query('UNLOCK TABLES');
  }
  const outcome = await reading;
  if (seen && !seen.statement.includes('wsrep_sync_wait')) {
    throw new Error(`the read on node 2 went on without waiting for the cluster's commits: "${seen.statement}" was ${seen.state}`);
  }
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

async function saleOnBothNodes(): Promise<SaleRecord> {
  const now = Date.now();
  const sale = await createOrderStore(onFirst).insertSale({
    name: `reads-${randomUUID()}`,
    stock: STOCK,
    perUserLimit: 1,
    startsAt: new Date(now - 60_000),
    endsAt: new Date(now + 3_600_000),
  });
  // On node 2 before its applier is held: only the orders are what it lacks.
  await until(
    () => onSecond.sale.count({ where: { id: sale.id } }),
    (n) => n === 1,
    30_000,
  );
  return sale;
}

/** ORDERS orders of one unit, written by the worker's batch on node 1. */
async function ordersOnFirst(sale: SaleRecord): Promise<void> {
  const batch: Reservation[] = Array.from({ length: ORDERS }, (_, i) => ({
    reservationId: `${sale.id}-${randomUUID()}`,
    saleId: sale.id,
    userId: `reads-${sale.id}-${i}`,
    quantity: 1,
    reservedAt: Date.now(),
    generation: sale.generation,
  }));
  expect((await createOrderStore(onFirst).sale(sale.id).writeOrderBatch(batch)).written).toHaveLength(ORDERS);
}

describe('a read on the node the writer moves to, of what another node committed (wsrep_sync_wait)', () => {
  it("the audit's count of accepted units waits for node 2 to apply the orders node 1 committed", async () => {
    const sale = await saleOnBothNodes();
    const units = await readOnSecondBehind(
      () => ordersOnFirst(sale),
      () =>
        createOrderStore(onSecond)
          .sale(sale.id)
          .unitsAcceptedBy(Date.now() + 60_000, new Set()),
    );
    expect(units).toBe(ORDERS);
  });

  it("the rebuild's count of live orders waits for them: remaining = stock - units node 1 committed", async () => {
    const sale = await saleOnBothNodes();
    const plan = await readOnSecondBehind(
      () => ordersOnFirst(sale),
      () =>
        createOrderStore(onSecond)
          .sale(sale.id)
          .lockForRebuild((locked) => locked.switchGeneration({ lost: false })),
    );
    expect({ remaining: plan?.remaining, buyers: plan?.buyerCount }).toEqual({ remaining: STOCK - ORDERS, buyers: ORDERS });
  });

  it("the reconciler's identity read on node 2 is node 1's: the same cluster, the same seqno, judged the same MySQL", async () => {
    const sale = await saleOnBothNodes();
    let seen = '';
    const now = await readOnSecondBehind(
      async () => {
        await ordersOnFirst(sale);
        seen = await createOrderStore(onFirst).serverIdentity();
      },
      () => createOrderStore(onSecond).serverIdentity(),
    );
    expect(now).toBe(seen);
    expect(judgeMysqlServer(seen, now)).toBe('same');
  });
});
