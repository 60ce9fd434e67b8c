import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { armCommandDeadlines } from './command-deadlines.ts';
import { coalesceWrites } from './write-coalescing.ts';

type HostPort = { host: string; port: number };

/**
 * Where Redis is: one server (REDIS_URL), the seed nodes of a Redis Cluster (REDIS_CLUSTER_NODES), or
 * the sentinels that know which server is the primary (REDIS_SENTINELS, REDIS_SENTINEL_MASTER).
 */
export type RedisTarget = { url: string } | { clusterNodes: HostPort[] } | { sentinels: HostPort[]; masterName: string };

/** The target a process's configuration names: the cluster, else the sentinels, when set; else REDIS_URL. */
export function redisTargetOf(config: {
  REDIS_URL: string;
  REDIS_CLUSTER_NODES?: HostPort[] | undefined;
  REDIS_SENTINELS?: HostPort[] | undefined;
  REDIS_SENTINEL_MASTER?: string | undefined;
}): RedisTarget {
  if (config.REDIS_CLUSTER_NODES) return { clusterNodes: config.REDIS_CLUSTER_NODES };
  if (config.REDIS_SENTINELS) return { sentinels: config.REDIS_SENTINELS, masterName: config.REDIS_SENTINEL_MASTER ?? 'mymaster' };
  return { url: config.REDIS_URL };
}

/** A target given as a plain URL (tests, scripts) or as a RedisTarget. */
export type RedisTargetLike = RedisTarget | string;

/**
 * Opens a connection to the target: the one place that knows whether Redis is one server or a cluster.
 *
 * On a cluster it is ioredis's Cluster client, typed as a Redis: the system only uses what both offer
 * (commands, scripts, MULTI and pipelines whose keys share a slot, pub/sub), and the code that must tell
 * them apart (a pipeline over many sales, see bySlotGroup) asks `isCluster`. Every command is routed to
 * the master of its key's slot (reads too: a replica may lag, and the reconciler judges what a master
 * holds); MOVED, ASK, TRYAGAIN and a failover are followed by the client; scripts are registered on
 * the client and loaded on whichever node runs them (EVALSHA, then EVAL on NOSCRIPT).
 */
export function connectRedis(target: RedisTargetLike, options: RedisOptions = {}): Redis {
  // The command deadline is kept here (command-deadlines.ts), not by ioredis's per-command timers.
  const { commandTimeout, ...connectionOptions } = options;
  const redis = connectTarget(target, connectionOptions);
  // The commands of one event-loop turn leave together (write-coalescing.ts); on a cluster, per node.
  if ((redis as unknown as { isCluster?: boolean }).isCluster) redis.on('+node', (node: Redis) => coalesceWrites(node));
  else coalesceWrites(redis);
  if (commandTimeout !== undefined) armCommandDeadlines(redis, commandTimeout);
  return redis;
}

function connectTarget(target: RedisTargetLike, options: RedisOptions): Redis {
  if (typeof target === 'string') return new Redis(target, options);
  if ('url' in target) return new Redis(target.url, options);
  if ('sentinels' in target) return connectThroughSentinels(target, options);
  const cluster = new Cluster(target.clusterNodes, {
    redisOptions: options,
    scaleReads: 'master',
    // A failover takes a few seconds; commands wait (within their own timeout) rather than fail at once.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 100,
    maxRedirections: 16,
    slotsRefreshTimeout: 2000,
    clusterRetryStrategy: (attempt) => Math.min(100 * attempt, 2000),
  });
  return cluster as unknown as Redis;
}

/**
 * A connection to the primary the sentinels name, asked again whenever the connection is lost. The
 * failover detector subscribes to the sentinels' `+switch-master` and reconnects at once, rather than
 * when the old primary's connection happens to fail (a frozen host never fails it); a command that meets
 * `READONLY` (a client still on a demoted primary) reconnects, asking the sentinels, and is sent again:
 * it did not run, so sending it again is safe.
 */
function connectThroughSentinels({ sentinels, masterName }: { sentinels: HostPort[]; masterName: string }, options: RedisOptions): Redis {
  return stayConnected(
    new Redis({
      ...options,
      sentinels,
      name: masterName,
      role: 'master',
      failoverDetector: true,
      // A sentinel that does not answer is skipped for the next; all silent, asked again within a second.
      sentinelRetryStrategy: (attempt) => Math.min(100 * attempt, 1000),
      sentinelCommandTimeout: 1000,
      reconnectOnError: (error) => (error.message.startsWith('READONLY') ? 2 : false),
    }),
  );
}

/**
 * ioredis 5 can end a Sentinel connection for good in the middle of a failover: a `+switch-master`
 * heard by the previous connection's failover detector while the client is asking the sentinels again
 * aborts that attempt ("Connection is closed"), and the client goes to `end`, failing every later
 * command (ioredis issue #1683). A connection this process did not close is opened again; so are its
 * duplicates (BullMQ's blocking connections).
 */
function stayConnected(redis: Redis): Redis {
  let closing = false;
  const quit = redis.quit.bind(redis);
  const disconnect = redis.disconnect.bind(redis);
  const duplicate = redis.duplicate.bind(redis);
  redis.quit = (...args: Parameters<Redis['quit']>) => {
    closing = true;
    return quit(...args);
  };
  redis.disconnect = (reconnect = false) => {
    if (!reconnect) closing = true;
    disconnect(reconnect);
  };
  redis.duplicate = (override) => stayConnected(duplicate(override));
  redis.on('end', () => {
    if (!closing) setTimeout(() => void redis.connect().catch(() => undefined), 100).unref();
  });
  return redis;
}

/** Whether a connection made by connectRedis is a cluster client. */
export function isClusterClient(redis: Redis): boolean {
  return (redis as unknown as { isCluster?: boolean }).isCluster === true;
}
