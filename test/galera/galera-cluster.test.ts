import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import type { ReconcileReason } from '@flashsale/jobs';
import { startGaleraCluster, testRedisPrefix, type GaleraCluster } from '@flashsale/harness';
import { createPrisma } from '@flashsale/order-store';
import { createRedis, createSaleStore } from '@flashsale/redis-store';
import { createLogger } from '@flashsale/runtime';
import { salesDeps, watchMysqlServer } from '@flashsale/sales/testing';
import { runScript } from '../support/run-process.ts';
import { until } from '../support/until.ts';

// Why the system runs on Galera with ONE writer (docs/operations.md, "Running on a Galera cluster"): a
// row lock is local to the node that takes it. The sale row's FOR UPDATE, which serialises the batches of
// one sale and fences the rebuild's switch of generation, blocks nobody on another node; the two
// transactions both run, and certification lets the first COMMIT win and refuses the other at its
// COMMIT (1213), after its work was done. With every connection on one node (HAProxy, backups) the
// locks keep their meaning and a conflict is left to the moment the writer changes.

let cluster: GaleraCluster;
const opened: Connection[] = [];
beforeAll(async () => {
  const began = performance.now();
  cluster = await startGaleraCluster();
  console.log(`3-node Galera cluster and HAProxy started in ${Math.round(performance.now() - began)} ms`);
});
afterAll(async () => {
  await Promise.all(opened.map((c) => c.end().catch(() => c.destroy())));
  await cluster?.stop();
});

async function connect(port: number, database?: string): Promise<Connection> {
  const connection = await createConnection({ host: '127.0.0.1', port, user: 'root', password: '', ...(database ? { database } : {}) });
  connection.on('error', () => undefined);
  opened.push(connection);
  return connection;
}

const portOf = async (c: Connection) => Number((await c.query<{ port: number }[]>('SELECT @@port AS port'))[0]!.port);

describe('a Galera cluster behind HAProxy (infra/galera/haproxy.cfg)', () => {
  it('sends every connection to one node, and what it writes is read on the other nodes', async () => {
    const viaProxy = await Promise.all(Array.from({ length: 8 }, () => connect(cluster.port)));
    const ports = new Set(await Promise.all(viaProxy.map(portOf)));
    expect([...ports]).toEqual([cluster.nodes[0]!.port]);

    await viaProxy[0]!.query('CREATE DATABASE writer_model');
    await viaProxy[0]!.query('CREATE TABLE writer_model.sales (id INT PRIMARY KEY, sold INT NOT NULL)');
    await viaProxy[0]!.query('INSERT INTO writer_model.sales VALUES (1, 0)');
    for (const node of cluster.nodes.slice(1)) {
      const direct = await connect(node.port);
      await direct.query('SET SESSION wsrep_sync_wait = 1');
      expect(await direct.query('SELECT id, sold FROM writer_model.sales')).toEqual([{ id: 1, sold: 0 }]);
    }
  });

  it('passes `npm run services` through HAProxy, and fails it on a node that takes no queries or a cluster too small', async () => {
    const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    const through = await runScript('infra/ensure-services.ts', { DATABASE_URL: cluster.url('mysql'), REDIS_URL: redisUrl });
    expect({ code: through.code, out: through.stdout.trim() }).toEqual({
      code: 0,
      out: expect.stringContaining('(a Galera node, Synced, cluster of 3) answer'),
    });
    const tooSmall = await runScript('infra/ensure-services.ts', {
      DATABASE_URL: cluster.url('mysql'),
      REDIS_URL: redisUrl,
      GALERA_MIN_NODES: '4',
    });
    expect({ code: tooSmall.code, err: tooSmall.stderr.trim() }).toEqual({
      code: 1,
      err: expect.stringContaining('is in a cluster of 3 nodes, fewer than GALERA_MIN_NODES=4'),
    });
    // A desynced node (as a donor is) is not Synced: HAProxy's check takes it out, and so does this one.
    const third = await connect(cluster.nodes[2]!.port);
    await third.query('SET GLOBAL wsrep_desync = ON');
    try {
      const desynced = await runScript('infra/ensure-services.ts', { DATABASE_URL: cluster.nodes[2]!.url('mysql'), REDIS_URL: redisUrl });
      expect({ code: desynced.code, err: desynced.stderr.trim() }).toEqual({
        code: 1,
        err: expect.stringMatching(/is Donor\/Desynced, ready ON: it takes no queries/),
      });
    } finally {
      await third.query('SET GLOBAL wsrep_desync = OFF');
    }
  });

  it('does not block a writer on another node with a row lock: both do their work, the second COMMIT fails with 1213', async () => {
    const [onFirst, onSecond] = [
      await connect(cluster.nodes[0]!.port, 'writer_model'),
      await connect(cluster.nodes[1]!.port, 'writer_model'),
    ];
    await onFirst.beginTransaction();
    await onFirst.query('SELECT sold FROM sales WHERE id = 1 FOR UPDATE');
    await onSecond.beginTransaction();
    // On one server this would wait for the lock (and time out): on Galera it runs at once.
    await onSecond.query('SELECT sold FROM sales WHERE id = 1 FOR UPDATE');
    await onSecond.query('UPDATE sales SET sold = sold + 2 WHERE id = 1');
    await onFirst.query('UPDATE sales SET sold = sold + 1 WHERE id = 1');
    await onFirst.commit();
    const refused = await onSecond.commit().then(
      () => null,
      (error: unknown) => error as { errno: number; message: string },
    );
    expect(refused?.errno).toBe(1213);
    const check = await connect(cluster.nodes[2]!.port, 'writer_model');
    await check.query('SET SESSION wsrep_sync_wait = 1');
    expect(await check.query('SELECT sold FROM sales WHERE id = 1')).toEqual([{ sold: 1 }]);
  });

  it('moves every connection to one backup when the writer is SIGKILLed, and keeps it there once the node is back (no fail-back)', async () => {
    const [first, second] = cluster.nodes;
    await first!.kill('SIGKILL');
    const killedAt = performance.now();
    let writer = await untilWriterIsNot(first!.port);
    const tookMs = Math.round(performance.now() - killedAt);
    expect(writer.index).toBe(2);
    // HAProxy checks every second and marks a node down after two failures.
    expect(tookMs).toBeLessThan(15_000);
    const viaProxy = await Promise.all(Array.from({ length: 4 }, () => connect(cluster.port)));
    expect(new Set(await Promise.all(viaProxy.map(portOf)))).toEqual(new Set([second!.port]));
    await viaProxy[0]!.query('UPDATE writer_model.sales SET sold = sold + 1 WHERE id = 1');

    await first!.start();
    await cluster.waitSynced(3);
    // Time for HAProxy to see it pass its checks (rise 2, a second apart) before judging.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    writer = await cluster.writer();
    expect(writer.index).toBe(2);
    const back = await connect(first!.port);
    await back.query('SET SESSION wsrep_sync_wait = 1');
    expect(await back.query('SELECT sold FROM writer_model.sales WHERE id = 1')).toEqual([{ sold: 2 }]);
    console.log(`writer SIGKILLed: HAProxy moved connections to node 2 in ${tookMs} ms; node 1 rejoined, the writer stayed on node 2`);
  });
});

// The reconciler's MySQL identity (mysql-server-watch.ts) on Galera: the cluster's state UUID and last
// committed seqno. The writer moving between nodes must reconcile nothing (every live sale would pause for
// its drain); a cluster bootstrapped again from a node that left early has lost commits, as a replica
// promoted behind has, and must reconcile every live sale.
describe("the reconciler's view of MySQL on a Galera cluster", () => {
  const redis = createRedis({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  const store = createSaleStore(redis, testRedisPrefix());
  let prisma: ReturnType<typeof createPrisma>;
  const requested: { saleId: number; reason: ReconcileReason }[] = [];
  const watch = () =>
    watchMysqlServer(
      {
        ...salesDeps({ saleStore: store, prisma, logger: createLogger('galera-identity-test', 'silent') }),
        requestReconcile: async (saleId, reason) => void requested.push({ saleId, reason }),
      },
      [7, 8],
    );
  // A pool's connection to a node HAProxy dropped fails its next query, as in the reconciler, whose next round asks again.
  const watchUntilAnswered = () =>
    until(
      () => watch().catch(() => undefined),
      (changed) => changed !== undefined,
    );
  beforeAll(() => {
    prisma = createPrisma(cluster.url('mysql'), 2, 0, { acquireTimeoutMs: 20_000 });
  });
  afterAll(async () => {
    await prisma?.$disconnect();
    await store.deleteAllKeys();
    await redis.quit();
  });

  it('reconciles nothing when the writer moves to another node, and records the seqno it has reached', async () => {
    expect(await watchUntilAnswered()).toBe(false);
    const first = await store.lastSeenMysqlServer();
    expect(first).toMatch(/^wsrep_cluster_state_uuid=[0-9a-f-]{36},wsrep_last_committed=\d+$/);
    const writer = await cluster.writer();
    const direct = await connect(cluster.port);
    await direct.query('UPDATE writer_model.sales SET sold = sold + 1 WHERE id = 1');
    await writer.kill('SIGKILL');
    await untilWriterIsNot(writer.port);
    expect(await watchUntilAnswered()).toBe(false);
    expect(requested).toEqual([]);
    const after = await store.lastSeenMysqlServer();
    expect(after!.split(',')[0]).toBe(first!.split(',')[0]);
    expect(seqnoOf(after!)).toBeGreaterThan(seqnoOf(first!));
    await writer.start();
    await cluster.waitSynced(3);
  });

  it('reconciles every live sale when the cluster is bootstrapped again from a node that left before the last commits', async () => {
    expect(await watchUntilAnswered()).toBe(false);
    const writer = await cluster.writer();
    const behind = cluster.nodes.find((n) => n !== writer)!;
    // Stopped cleanly: its saved state names the cluster and the seqno it left at.
    await behind.kill('SIGTERM');
    await cluster.waitSynced(2);
    const viaProxy = await until(
      () => connect(cluster.port).catch(() => undefined),
      (c) => c !== undefined,
    );
    for (let i = 0; i < 5; i++) await viaProxy!.query('UPDATE writer_model.sales SET sold = sold + 1 WHERE id = 1');
    expect(await watchUntilAnswered()).toBe(false);
    const seen = await store.lastSeenMysqlServer();
    // Every node down; the one that left early is the one an operator starts the cluster from.
    await Promise.all(cluster.nodes.map((n) => n.kill('SIGKILL')));
    behind.markSafeToBootstrap();
    await behind.start({ bootstrap: true });
    await cluster.waitSynced(1);
    await until(
      () => cluster.writer().catch(() => undefined),
      (reached) => reached === behind,
      30_000,
    );
    expect(await watchUntilAnswered()).toBe(true);
    expect(requested).toEqual([
      { saleId: 7, reason: 'mysql_changed' },
      { saleId: 8, reason: 'mysql_changed' },
    ]);
    const now = await store.lastSeenMysqlServer();
    expect(now!.split(',')[0]).toBe(seen!.split(',')[0]);
    expect(seqnoOf(now!)).toBeLessThan(seqnoOf(seen!));
  });
});

const seqnoOf = (identity: string) => Number(/wsrep_last_committed=(\d+)/.exec(identity)![1]);

async function untilWriterIsNot(port: number) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const writer = await cluster.writer().catch(() => undefined);
    if (writer && writer.port !== port) return writer;
    if (Date.now() > deadline) throw new Error('HAProxy never moved off the killed node');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
