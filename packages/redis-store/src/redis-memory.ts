import type { Cluster, Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { isClusterClient } from './redis-target.ts';
import { isRedisUnavailable } from './redis-client.ts';
import type { SaleRef } from './store-ref.ts';

/** The two levels the check logs at (pino's shape). */
interface PolicyLogger {
  fatal(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

function serversOf(redis: Redis): Redis[] {
  return isClusterClient(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
}

/** The one policy the system runs under: Redis refuses writes when full rather than drop keys. */
const REQUIRED_POLICY = 'noeviction';

/** What the start-up check found on each Redis server (a cluster: each master). */
export type EvictionPolicyVerdict =
  | { kind: 'noeviction' }
  /** CONFIG is disabled or renamed (managed Redis, some clusters): the policy cannot be read. */
  | { kind: 'unknown'; reason: string }
  | { kind: 'evicting'; policy: string; node: string };

/**
 * Reads `maxmemory-policy` on every server the client writes to. Anything but `noeviction` lets Redis
 * drop a sale's keys (its meta, its buyers: seen under `allkeys-lru`, a busy sale's meta evicted every
 * few seconds) or BullMQ's, silently: the ledger survives only through rebuilds, and BullMQ itself
 * requires `noeviction`.
 */
export async function readEvictionPolicy(redis: Redis): Promise<EvictionPolicyVerdict> {
  for (const server of serversOf(redis)) {
    let reply: unknown;
    try {
      reply = await server.config('GET', 'maxmemory-policy');
    } catch (error) {
      if (isRedisUnavailable(error)) throw error;
      return { kind: 'unknown', reason: (error as Error).message };
    }
    const policy = Array.isArray(reply) ? String(reply[1] ?? '') : '';
    if (policy === '') return { kind: 'unknown', reason: 'CONFIG GET maxmemory-policy answered nothing' };
    if (policy !== REQUIRED_POLICY) return { kind: 'evicting', policy, node: `${server.options.host}:${server.options.port}` };
  }
  return { kind: 'noeviction' };
}

/**
 * The start-up check of every process, run once Redis answers (a process starts without Redis, so this
 * never holds up its start). An evicting policy is refused: the process logs why at fatal level and
 * exits 1, so a deployment on a misconfigured Redis stops at once instead of losing sales' keys at the
 * first full memory. A policy that cannot be read (CONFIG disabled) is a loud warning, once: the
 * reconciler's `flashsale_redis_evicted_keys_total` and its alert are then the only guard.
 */
export async function refuseEvictingRedis(
  redis: Redis,
  logger: PolicyLogger,
  exit: (code: number) => void = (code) => process.exit(code),
): Promise<EvictionPolicyVerdict> {
  let verdict: EvictionPolicyVerdict | undefined;
  while (!verdict) {
    // Redis away at start: asked again every second until it answers (the process serves meanwhile).
    verdict = await readEvictionPolicy(redis).catch(() => sleep(1000).then(() => undefined));
  }
  if (verdict.kind === 'evicting') {
    logger.fatal(
      { maxmemoryPolicy: verdict.policy, node: verdict.node },
      "Redis may evict keys (maxmemory-policy is not noeviction): a sale's stock, buyers or stream could vanish silently. Set `maxmemory-policy noeviction` (infra/redis.conf) and start again",
    );
    exit(1);
  } else if (verdict.kind === 'unknown') {
    logger.warn(
      { reason: verdict.reason },
      'cannot read Redis maxmemory-policy (CONFIG disabled?): make sure it is noeviction; evictions are counted in flashsale_redis_evicted_keys_total',
    );
  }
  return verdict;
}

/** Memory and evictions of one Redis server, from INFO. */
export interface RedisMemory {
  node: string;
  usedMemoryBytes: number;
  /** 0: no limit. */
  maxmemoryBytes: number;
  evictedKeys: number;
}

/** INFO memory and stats of every server (a cluster: each master). */
export async function readRedisMemory(redis: Redis): Promise<RedisMemory[]> {
  return Promise.all(
    serversOf(redis).map(async (server) => {
      const info = `${await server.info('memory')}\n${await server.info('stats')}`;
      const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
      return {
        node: `${server.options.host}:${server.options.port}`,
        usedMemoryBytes: field('used_memory'),
        maxmemoryBytes: field('maxmemory'),
        evictedKeys: field('evicted_keys'),
      };
    }),
  );
}

/** One server's memory against its limit, as Redis judges it (see memory-limit-1.lua). */
export interface MemoryLimit {
  /** Memory counted against `maxmemory`: used_memory less mem_not_counted_for_evict (replication and AOF buffers). */
  countedBytes: number;
  /** 0: no limit. */
  maxmemoryBytes: number;
  /** Over the limit: under `noeviction` Redis refuses every command that may add memory (OOM). */
  refusesWrites: boolean;
}

/** The limit from the three numbers memory-limit-1.lua and snapshot-sale-3.lua answer (used, not counted, maxmemory). */
export function memoryLimitOf(reply: unknown): MemoryLimit {
  const [used, notCounted, max] = (reply as unknown[]).map(Number) as [number, number, number];
  const countedBytes = Math.max(0, used - notCounted);
  // Redis refuses while counted > maxmemory (performEvictions); at or under it, a write still passes.
  return { countedBytes, maxmemoryBytes: max, refusesWrites: max > 0 && countedBytes > max };
}

/** Whether the server holding the sale refuses writes for memory now (a read-only script: Redis runs it at its limit). */
export async function readMemoryLimit({ redis, keys }: SaleRef): Promise<MemoryLimit> {
  return memoryLimitOf(await redis.memoryLimit(keys.meta));
}
