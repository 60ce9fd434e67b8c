import { Redis } from 'ioredis';
import { withScripts, type ScriptedRedis } from './scripts.ts';

export interface RedisClientOptions {
  /** Connection name shown by CLIENT LIST, e.g. `gateway`. */
  name?: string;
  /**
   * Retries of one command across reconnects before it fails, default 2. Low on purpose: a buyer is
   * better served by a fast 503 than by a request hanging while Redis is away.
   */
  maxRetriesPerRequest?: number | null;
  /**
   * Called with connection errors (ioredis reconnects on its own). Without it they are dropped here:
   * they also surface as the failures of the commands they affect.
   */
  onError?: (error: Error) => void;
}

/** A Redis connection with the project's scripts loaded. */
export function createRedis(url: string, options: RedisClientOptions = {}): ScriptedRedis {
  const redis = new Redis(url, {
    connectionName: options.name,
    maxRetriesPerRequest: options.maxRetriesPerRequest === undefined ? 2 : options.maxRetriesPerRequest,
    retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
  });
  redis.on('error', options.onError ?? (() => undefined));
  return withScripts(redis);
}
