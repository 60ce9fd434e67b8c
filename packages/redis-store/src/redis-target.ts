import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** Where Redis is: one server (REDIS_URL), or the seed nodes of a Redis Cluster (REDIS_CLUSTER_NODES). */
export type RedisTarget = { url: string } | { clusterNodes: { host: string; port: number }[] };

/** The target a process's configuration names: the cluster when REDIS_CLUSTER_NODES is set, else REDIS_URL. */
export function redisTargetOf(config: { REDIS_URL: string; REDIS_CLUSTER_NODES?: { host: string; port: number }[] | undefined }): RedisTarget {
  return config.REDIS_CLUSTER_NODES ? { clusterNodes: config.REDIS_CLUSTER_NODES } : { url: config.REDIS_URL };
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
  if (typeof target === 'string') return new Redis(target, options);
  if ('url' in target) return new Redis(target.url, options);
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

/** Whether a connection made by connectRedis is a cluster client. */
export function isClusterClient(redis: Redis): boolean {
  return (redis as unknown as { isCluster?: boolean }).isCluster === true;
}
