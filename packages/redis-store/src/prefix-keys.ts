import type { Cluster, Redis } from 'ioredis';
import { isClusterClient } from './redis-target.ts';
import type { StoreRef } from './store-ref.ts';

/** `prefix` as a SCAN MATCH pattern's literal part (a prefix may not hold glob characters today; escaped anyway). */
const literal = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/**
 * Deletes every key under `<prefix>:` and returns how many there were: what a test, the demo or a load
 * run leaves behind; no process of a deployment calls it. `redis` is one server or a cluster.
 *
 * On one server the keys are SCANned and deleted a page at a time. On a cluster SCAN sees only the node
 * it runs on, so each master is scanned on its own, and the keys are deleted one by one (a DEL of several
 * keys must keep to one slot; a page's DELs are sent side by side).
 */
export async function deleteKeysWithPrefix({ redis, prefix }: StoreRef<Redis>): Promise<number> {
  const cluster = isClusterClient(redis);
  // A cluster client knows its masters once it has read the slots: a first command waits for that.
  if (cluster) await redis.ping();
  const nodes: Redis[] = cluster ? (redis as unknown as Cluster).nodes('master') : [redis];
  let deleted = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${literal(prefix)}:*`, 'COUNT', 1000);
      if (keys.length > 0) {
        if (cluster) await Promise.all(keys.map((key) => node.del(key)));
        else await node.del(...keys);
        deleted += keys.length;
      }
      cursor = next;
    } while (cursor !== '0');
  }
  return deleted;
}
