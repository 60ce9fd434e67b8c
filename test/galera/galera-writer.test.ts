import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import { startGaleraCluster, type GaleraCluster } from '@flashsale/harness';

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

  it('does not block a writer on another node with a row lock: both do their work, the second COMMIT fails with 1213', async () => {
    const [onFirst, onSecond] = [await connect(cluster.nodes[0]!.port, 'writer_model'), await connect(cluster.nodes[1]!.port, 'writer_model')];
    await onFirst.beginTransaction();
    await onFirst.query('SELECT sold FROM sales WHERE id = 1 FOR UPDATE');
    await onSecond.beginTransaction();
    // On one server this would wait for the lock (and time out): on Galera it runs at once.
    await onSecond.query('SELECT sold FROM sales WHERE id = 1 FOR UPDATE');
    await onSecond.query('UPDATE sales SET sold = sold + 2 WHERE id = 1');
    await onFirst.query('UPDATE sales SET sold = sold + 1 WHERE id = 1');
    await onFirst.commit();
    const refused = await onSecond.commit().then(() => null, (error: unknown) => error as { errno: number; message: string });
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

async function untilWriterIsNot(port: number) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const writer = await cluster.writer().catch(() => undefined);
    if (writer && writer.port !== port) return writer;
    if (Date.now() > deadline) throw new Error('HAProxy never moved off the killed node');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
