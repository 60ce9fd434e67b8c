import type { Logger } from '@flashsale/runtime';
import type { SaleEventsSubscription } from '@flashsale/bootstrap';

/** What a gateway holds about sales that an announcement makes wrong: the verdict cache, the remembered misses. */
export interface SaleNewsHolder {
  forget(saleId: number): void;
  forgetAll(): void;
  setListening(listening: boolean): void;
}

export interface SaleEventsListener {
  /** Resolves once the first subscription is in place; pending for as long as Redis has not answered. */
  subscribed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Keeps the verdict cache (and the remembered misses, SaleMisses) honest: subscribes to the sale events channel on a connection of its own (a
 * subscribed connection can run nothing else) and drops a sale's verdict when the reconciler announces
 * it. The cache is off until a subscription is in place (it starts so), and between a disconnect and the
 * next successful SUBSCRIBE, when announcements may be lost: so a gateway started while Redis is away
 * serves at once, and caches nothing until it hears the announcements. Returns at once; the subscription
 * is made whenever Redis answers.
 */
export function listenToSaleEvents(
  events: SaleEventsSubscription,
  prefix: string,
  holders: SaleNewsHolder[],
  logger: Logger,
): SaleEventsListener {
  const cache: SaleNewsHolder = {
    forget: (saleId) => holders.forEach((holder) => holder.forget(saleId)),
    forgetAll: () => holders.forEach((holder) => holder.forgetAll()),
    setListening: (listening) => holders.forEach((holder) => holder.setListening(listening)),
  };
  const { channel } = events;
  const subscriber = events.connect({
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
  let closed = false;
  let firstSubscription: () => void;
  const subscribed = new Promise<void>((resolve) => (firstSubscription = resolve));
  // SUBSCRIBE is sent only once connected, never queued for a Redis that is away.
  subscriber.on('ready', () => {
    subscriber.subscribe(channel).then(
      () => {
        if (closed) return;
        // Messages sent while the connection was down are gone: forget everything, then trust again.
        cache.setListening(true);
        logger.info({ channel }, 'sale events subscribed: verdict cache on');
        firstSubscription();
      },
      (error: unknown) => {
        // Closed while the SUBSCRIBE was on its way (a stop right after the start): nothing failed.
        if (!closed) logger.warn({ err: error }, 'sale events subscription failed');
      },
    );
  });
  return {
    subscribed,
    async close() {
      closed = true;
      cache.setListening(false);
      subscriber.disconnect();
    },
  };
}
