import type { DoorView } from '@flashsale/domain';

/** Readings at least this far apart (Redis's clock) make a rate: nearer ones say more of noise than of the crowd. */
const MIN_SPAN_MS = 1000;
/** Weight of the newest span in the rate: the rate follows a change within a few seconds. */
const WEIGHT = 0.5;

/**
 * How fast buyers join each queued sale, as this gateway sees it: from the queue's length in the door
 * readings it already has (no Redis call of its own), smoothed over spans of a second or more. Joins
 * through other gateways count too (the queue is the sale's), which is what `auto` difficulty needs.
 */
export class JoinRates {
  readonly #sales = new Map<number, { queued: number; at: number; rate: number }>();

  /** Takes `door` (read at about `now`) into account and answers the sale's joins per second. */
  saw(door: DoorView, now: number): number {
    const last = this.#sales.get(door.saleId);
    if (!last) {
      this.#sales.set(door.saleId, { queued: door.queued, at: now, rate: 0 });
      return 0;
    }
    if (now - last.at >= MIN_SPAN_MS) {
      const span = Math.max(0, door.queued - last.queued) / ((now - last.at) / 1000);
      this.#sales.set(door.saleId, { queued: door.queued, at: now, rate: last.rate * (1 - WEIGHT) + span * WEIGHT });
    }
    return this.#sales.get(door.saleId)!.rate;
  }
}
