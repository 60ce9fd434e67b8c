import type { DoorReading, SaleStore } from '@flashsale/redis-store';

/**
 * Every gateway's copy of the doors its buyers ask about: one admit call per sale at most every
 * `maxAgeMs` (default 250) whatever the crowd, shared by every request meanwhile (one call in flight per
 * sale). That call is also what moves the door on; a sale nobody asks about is not moved, and needs not
 * be. A waiting buyer's status is answered from this copy and their ticket: no Redis call per poll.
 */
export class DoorFrontiers {
  readonly #entries = new Map<number, { reading: DoorReading; at: number }>();
  readonly #inFlight = new Map<number, Promise<{ reading: DoorReading; at: number }>>();

  constructor(
    private readonly redis: SaleStore,
    private readonly maxAgeMs = 250,
    /** A monotonic clock in ms (a test moves its own). */
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /**
   * The door of `saleId`, and now on Redis's clock (the reading's, moved on by the local monotonic clock).
   * `refresh`: read from Redis whatever the copy's age (shared with any read in flight).
   */
  async read(saleId: number, refresh = false): Promise<{ reading: DoorReading; now: number }> {
    const cached = this.#entries.get(saleId);
    const fresh = !refresh && cached && this.clock() - cached.at <= this.maxAgeMs ? cached : await this.#refresh(saleId);
    return { reading: fresh.reading, now: fresh.reading.kind === 'door' ? fresh.reading.door.now + (this.clock() - fresh.at) : 0 };
  }

  /** Moves the door on now and keeps what it reports (the operator's change passes through here too). */
  async admit(saleId: number, change: { admitPerSecond?: number; paused?: boolean }): Promise<DoorReading> {
    const at = this.clock();
    const reading = await this.redis.sale(saleId).admitQueue(change);
    this.#keep(saleId, reading, at);
    return reading;
  }

  #refresh(saleId: number): Promise<{ reading: DoorReading; at: number }> {
    let pending = this.#inFlight.get(saleId);
    if (!pending) {
      const at = this.clock();
      pending = this.redis
        .sale(saleId)
        .admitQueue()
        .then((reading) => this.#keep(saleId, reading, at))
        .finally(() => this.#inFlight.delete(saleId));
      this.#inFlight.set(saleId, pending);
    }
    return pending;
  }

  #keep(saleId: number, reading: DoorReading, at: number): { reading: DoorReading; at: number } {
    const entry = { reading, at };
    // Only sales that exist are kept: ids a client makes up do not fill the map.
    if (reading.kind === 'sale_not_found') this.#entries.delete(saleId);
    else this.#entries.set(saleId, entry);
    return entry;
  }
}
