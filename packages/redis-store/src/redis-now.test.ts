import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startRedisCluster, type RedisCluster } from '@flashsale/harness';
import { createRedis } from './redis-client.ts';
import { saleKeys } from './keys.ts';
import { redisNow } from './sale-meta.ts';
import type { ScriptedRedis } from './scripts.ts';

// On a cluster each master has its own clock; a sale's scripts read its master's. redisNow with one of
// the sale's keys must read that one: counted here by each master's own INFO commandstats.

let cluster: RedisCluster;
let redis: ScriptedRedis;
beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  redis = createRedis({ clusterNodes: cluster.nodes.map(({ host, port }) => ({ host, port })) });
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

async function timeCalls(url: string): Promise<number> {
  const node = new Redis(url);
  const info = await node.info('commandstats');
  node.disconnect();
  return Number(/^cmdstat_time:calls=(\d+)/m.exec(info)?.[1] ?? 0);
}

describe('redisNow on a Redis Cluster', () => {
  it("reads the clock of the master serving the sale's keys", async () => {
    for (const saleId of [1, 2, 3, 4, 5, 6]) {
      const key = saleKeys('t', saleId).meta;
      const owner = await cluster.masterOf(key);
      const masters = await cluster.masters();
      const before = await Promise.all(masters.map((m) => timeCalls(m.url)));
      const now = await redisNow(redis, key);
      const after = await Promise.all(masters.map((m) => timeCalls(m.url)));
      expect(Math.abs(now - Date.now())).toBeLessThan(5000);
      expect(masters.map((m, i) => [m.port, after[i]! - before[i]!])).toEqual(masters.map((m) => [m.port, m.port === owner.port ? 1 : 0]));
    }
  });
});
