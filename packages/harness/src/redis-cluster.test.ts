import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { startRedisCluster, type RedisCluster } from './redis-cluster.ts';

let cluster: RedisCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const clientOf = (running: RedisCluster) => new Cluster(running.nodes.map((n) => ({ host: n.host, port: n.port })));

describe('a test Redis Cluster (startRedisCluster)', () => {
  it('starts three masters that share the slots: keys of one hash tag on one master, the sales spread over all three', async () => {
    const started = performance.now();
    cluster = await startRedisCluster();
    const startedInMs = performance.now() - started;
    const client = clientOf(cluster);

    for (let sale = 1; sale <= 30; sale++) await client.set(`t:{s${sale}}:meta`, String(sale));
    const mastersOfSales = new Set<number>();
    for (let sale = 1; sale <= 30; sale++) {
      const meta = await cluster.masterOf(`t:{s${sale}}:meta`);
      expect((await cluster.masterOf(`t:{s${sale}}:stream`)).port).toBe(meta.port);
      mastersOfSales.add(meta.port);
    }

    expect((await cluster.masters()).length).toBe(3);
    expect(mastersOfSales.size).toBe(3);
    expect(await client.get('t:{s7}:meta')).toBe('7');
    expect(startedInMs).toBeLessThan(15_000);
    client.disconnect();
  });

  it('with a replica per master, fails a master over to its replica, which then serves the slot', async () => {
    cluster = await startRedisCluster({ replicasPerMaster: 1 });
    const client = clientOf(cluster);
    const master = await cluster.masterOf('t:{s1}:meta');
    // Written on the master's own connection and WAITed for there: the write has reached the replica
    // before the failover, so nothing is lost in this test.
    const direct = new Redis(master.url);
    await direct.set('t:{s1}:meta', 'before');
    expect(await direct.wait(1, 2000)).toBe(1);
    direct.disconnect();
    const [replica] = await cluster.replicasOf(master);

    await cluster.failover(replica!);

    expect((await cluster.masterOf('t:{s1}:meta')).port).toBe(replica!.port);
    expect(await client.get('t:{s1}:meta')).toBe('before');
    client.disconnect();
  });
});
