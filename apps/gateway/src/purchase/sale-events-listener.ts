import { Redis } from 'ioredis';
import type { Logger } from '@flashsale/config';
import { saleEventsChannel } from '@flashsale/redis-store';
import type { SaleVerdictCache } from './sale-verdict-cache.ts';

export interface SaleEventsListener {
  close(): Promise<void>;
}

/**
 * Keeps the verdict cache honest: subscribes to the sale events channel on a connection of its own (a
 * subscribed connection can run nothing else) and drops a sale's verdict when the reconciler announces
 * it. Between a disconnect and the next successful SUBSCRIBE announcements may be lost, so the cache is
 * switched off and emptied for that time. Resolves once the first subscription is in place.
 */
export async function listenToSaleEvents(redisUrl: string, prefix: string, cache: SaleVerdictCache, logger: Logger): Promise<SaleEventsListener> {
  const channel = saleEventsChannel(prefix);
  const subscriber = new Redis(redisUrl, {
    // Named after the prefix, so an operator (or a test) can find this deployment's subscriber.
    connectionName: `gateway-sale-events:${prefix}`,
    // ioredis resubscribes by itself after a reconnect; 'ready' below then switches the cache back on.
    autoResubscribe: true,
    maxRetriesPerRequest: null,
    retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
  });
  subscriber.on('error', (error: Error) => logger.warn({ err: error }, 'sale events connection error'));
  subscriber.on('close', () => cache.setListening(false));
  subscriber.on('message', (_channel: string, message: string) => {
    const saleId = Number(message);
    if (Number.isInteger(saleId)) cache.forget(saleId);
    else cache.forgetAll();
  });
  const subscribe = async () => {
    await subscriber.subscribe(channel);
    // Messages sent while the connection was down are gone: forget everything, then trust again.
    cache.setListening(true);
  };
  subscriber.on('ready', () => {
    subscribe().catch((error: unknown) => logger.warn({ err: error }, 'sale events subscription failed'));
  });
  await new Promise<void>((resolve, reject) => {
    subscriber.once('ready', () => void subscriber.subscribe(channel).then(() => resolve(), reject));
  });
  return {
    async close() {
      cache.setListening(false);
      subscriber.disconnect();
    },
  };
}
