import type { Redis } from 'ioredis';
import { workSignalChannel } from './keys.ts';
import type { StoreRef } from './store-ref.ts';

/**
 * The "work waiting" signal: a gateway that has just enqueued a reservation says so on this pub/sub
 * channel (the message is the sale id), and the workers read that sale's stream at once instead of
 * polling every live sale every few milliseconds. It is a hint, never the only way a worker learns of
 * work: a signal lost (a gateway that died between the script and the publish, a worker whose
 * subscription dropped) costs at most one sweep period (WORKER_SWEEP_MS, see the worker's SaleSchedule),
 * never an entry. Plain PUBLISH: on Redis Cluster it reaches every node's subscribers. The channel is
 * `workSignalChannel` (keys.ts).
 */

/**
 * The gateway's side of the signal, one per process: at most one publish per sale per `everyMs`, so a
 * sale taking thousands of purchases a second costs Redis a few dozen publishes a second, and the first
 * purchase after a quiet spell is signalled at once. Workers keep a signalled sale "hot" (read every
 * round) far longer than `everyMs`, so the purchases in between are read all the same.
 */
export class WorkSignaller {
  /** When each sale was last signalled (monotonic ms). Bounded: cleared whenever it passes MAX_SALES. */
  private readonly sentAt = new Map<number, number>();
  private static readonly MAX_SALES = 100_000;

  constructor(
    private readonly store: StoreRef<Redis>,
    private readonly everyMs = 50,
  ) {}

  /** Says that `saleId` has a new reservation; fire and forget (a failed publish is made up by the sweep). */
  reserved(saleId: number): void {
    const now = performance.now();
    const last = this.sentAt.get(saleId);
    if (last !== undefined && now - last < this.everyMs) return;
    if (this.sentAt.size >= WorkSignaller.MAX_SALES) this.sentAt.clear();
    this.sentAt.set(saleId, now);
    this.store.redis.publish(workSignalChannel(this.store.prefix), String(saleId)).catch(() => undefined);
  }
}

/**
 * The worker's side: subscribes `subscriber` (a connection of its own: a subscribed connection runs
 * nothing else) and calls `onSale` with each signalled sale id, and `onResubscribed` whenever the
 * subscription is (re)established, since signals sent while it was down are lost.
 */
export async function listenForWork(
  subscriber: Redis,
  prefix: string,
  handlers: { onSale(saleId: number): void; onResubscribed(): void },
): Promise<void> {
  const channel = workSignalChannel(prefix);
  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    const saleId = Number(message);
    if (Number.isSafeInteger(saleId) && saleId > 0) handlers.onSale(saleId);
  });
  // ioredis subscribes again by itself after a reconnect; 'ready' marks the moment it has.
  subscriber.on('ready', () => handlers.onResubscribed());
  await subscriber.subscribe(channel);
}
