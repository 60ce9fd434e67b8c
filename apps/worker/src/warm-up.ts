import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkerStores } from '@flashsale/bootstrap';
import type { Logger } from '@flashsale/runtime';

/**
 * Opens the connections (and loads Prisma's query compiler, which it does on the first query) before
 * the first batch, so that "worker started" means both stores answered and the first batch does not pay
 * for it; MySQL's server settings are checked on the way. A store that is down does not stop the start:
 * the loop retries until it is back.
 */
export async function warmUp({ redis, sales }: WorkerStores, logger: Logger): Promise<void> {
  const within = <T>(promise: Promise<T>, what: string) =>
    Promise.race([
      promise.then(() => undefined),
      sleep(2000).then(() => Promise.reject(new Error(`${what} did not answer within 2 s`))),
    ]).catch((err: unknown) => logger.warn({ err }, `${what} not reachable at start; the worker will retry`));
  await Promise.all([within(redis.ping(), 'Redis'), within(sales.checkServerSettings(), 'MySQL')]);
}
