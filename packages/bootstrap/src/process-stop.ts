import { onShutdownSignal } from '@flashsale/runtime';
import type { InternalPort, ProcessBoot } from './process-boot.ts';
import type { ProcessStores } from './process-stores.ts';

/** What a process does when told to stop, in this order; each part is optional. */
export interface ProcessStop {
  /** Awaited first, whatever the stores' state: the gateway's drain, every request in flight answered. */
  drain?: () => Promise<void>;
  /**
   * The work in hand (a worker's round, the reconciler's passes), awaited while Redis answers. With Redis
   * away it waits on commands queued for Redis's return, each up to its timeout, past the shutdown
   * deadline: it is left as a crash would leave it, which the protocols are built to survive.
   */
  work?: () => Promise<unknown>;
  /** Says what was left when Redis is away (logged at warn). */
  onRedisAway?: () => void;
  /** Once the work is over or left: the totals line. */
  stopped?: () => void;
  /** Served to the end, closed last but MySQL: the stop is worth seeing. */
  internalPort?: InternalPort;
}

/**
 * Stops the process on SIGTERM or SIGINT (onShutdownSignal: a second signal, or SHUTDOWN_TIMEOUT_MS
 * passing, exits at once): the drain, the work in hand, then Redis, the internal port, MySQL.
 */
export function stopOnSignal(proc: ProcessBoot, stores: ProcessStores, stop: ProcessStop): void {
  onShutdownSignal(proc.logger, proc.config.SHUTDOWN_TIMEOUT_MS, async () => {
    await stop.drain?.();
    const inHand = stop.work?.();
    if (stores.redis.status === 'ready') {
      await inHand;
      await stores.jobs?.close();
      await stores.redis.quit();
    } else {
      // Redis is away: QUIT would wait in ioredis's offline queue behind the commands already waiting for
      // it, and BullMQ's close for its connections to have connected once; neither may come before the
      // deadline, and nothing is left to finish with Redis.
      stop.onRedisAway?.();
      stores.redis.disconnect();
    }
    stop.stopped?.();
    if (stop.internalPort?.port !== undefined) stop.internalPort.server?.close();
    await Promise.all([stores.prisma.$disconnect(), stores.dashboardPrisma?.$disconnect()]);
  });
}
