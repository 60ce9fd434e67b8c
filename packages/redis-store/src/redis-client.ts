import { withScripts, type ScriptedRedis } from './scripts.ts';
import { connectRedis, type RedisTargetLike } from './redis-target.ts';

export interface RedisClientOptions {
  /** Connection name shown by CLIENT LIST, e.g. `gateway`. */
  name?: string;
  /**
   * Retries of one command across reconnects before it fails, default 2. Low on purpose: a buyer is
   * better served by a fast 503 than by a request hanging while Redis is away.
   */
  maxRetriesPerRequest?: number | null;
  /**
   * Deadline of every command in ms, from the moment it is issued (queued while disconnected included),
   * default none. A Redis that is stopped or behind a network black hole keeps the TCP connection open
   * and never answers: without a deadline a command waits for as long as that lasts. A command past its
   * deadline fails on the client; Redis may still run it later, so callers must keep retries safe (the
   * reserve script answers a retry with the first reservation).
   */
  commandTimeoutMs?: number;
  /**
   * Called with connection errors (ioredis reconnects on its own). Without it they are dropped here:
   * they also surface as the failures of the commands they affect.
   */
  onError?: (error: Error) => void;
}

/** A Redis connection (one server, or a cluster: see connectRedis) with the project's scripts loaded. */
export function createRedis(target: RedisTargetLike, options: RedisClientOptions = {}): ScriptedRedis {
  const redis = connectRedis(target, {
    connectionName: options.name,
    maxRetriesPerRequest: options.maxRetriesPerRequest === undefined ? 2 : options.maxRetriesPerRequest,
    commandTimeout: options.commandTimeoutMs,
    // A connect that hangs (a black-holed address) counts against the same deadline, then retries.
    connectTimeout: options.commandTimeoutMs === undefined ? undefined : Math.max(options.commandTimeoutMs, 1000),
    retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
  });
  redis.on('error', options.onError ?? (() => undefined));
  return withScripts(redis);
}

// ioredis signals a command that could not be served (as opposed to one Redis refused for its content)
// with plain Errors and these messages, or with replies whose first word says the server is not able to
// serve right now.
const CLIENT_SIDE =
  /^(Command timed out|Connection is closed\.|Cluster isn't ready|Failed to refresh slots cache|None of startup nodes is available|Stream isn't writeable|Reached the max retries per request limit|connect ETIMEDOUT|connect ECONNREFUSED|read ECONNRESET|write EPIPE)/;
const SERVER_BUSY = /^(LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY|OOM|NOREPLICAS|MISCONF) /;

/**
 * Whether a failed command means Redis could not be reached or could not serve it now (timed out,
 * disconnected, loading, busy, out of memory, a failover in progress), as opposed to a bug or bad data
 * (WRONGTYPE, a script error). The first kind is a 503 to a client and a retry to a background loop.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ClusterAllFailedError') return true;
  return CLIENT_SIDE.test(error.message) || SERVER_BUSY.test(error.message);
}
