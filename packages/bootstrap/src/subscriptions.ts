import type { Redis } from 'ioredis';
import type { Config } from '@flashsale/config';
import type { Logger } from '@flashsale/runtime';
import { connectRedis, listenForWork, redisTargetOf, saleEventsChannel } from '@flashsale/redis-store';
import { bullConnection, openQueueCounts } from '@flashsale/jobs';

/**
 * The connections a process opens beside its stores' clients: subscriptions (a subscribed connection runs
 * nothing else) and BullMQ's (whose commands wait for a reconnect rather than fail).
 */

/**
 * The worker's side of the gateways' "work waiting" signal, on a connection of its own. Not awaited: with
 * Redis away the worker starts all the same (its sweep reads every sale), and ioredis subscribes when
 * Redis answers. Returns the connection, for the stop to close.
 */
export function listenForWorkSignals(
  config: Config,
  logger: Logger,
  handlers: { onSale(saleId: number): void; onResubscribed(): void },
): Redis {
  const subscriber = connectRedis(redisTargetOf(config), { connectionName: 'worker-signals', maxRetriesPerRequest: null });
  subscriber.on('error', () => undefined);
  void listenForWork(subscriber, config.REDIS_PREFIX, handlers).catch((err: unknown) =>
    logger.warn({ err }, 'not subscribed to work signals yet; ioredis subscribes when Redis answers'),
  );
  return subscriber;
}

/** The sale events channel (sale-events.ts) of the deployment, and a connection of its own to subscribe with. */
export interface SaleEventsSubscription {
  channel: string;
  connect(options: Parameters<typeof connectRedis>[1]): Redis;
}

export function saleEventsSubscription(config: Config): SaleEventsSubscription {
  return { channel: saleEventsChannel(config.REDIS_PREFIX), connect: (options) => connectRedis(redisTargetOf(config), options) };
}

/** A connection as BullMQ needs it (the reconciler's workers and the audit queue each take one). */
export function bullConnectionOf(config: Config): Redis {
  return bullConnection(redisTargetOf(config));
}

/** The BullMQ queues' job counts for the dashboard (queue-counts.ts): one connection, opened at the first read. */
export function queueCountsOf(config: Config) {
  return openQueueCounts(redisTargetOf(config), config.REDIS_PREFIX);
}
