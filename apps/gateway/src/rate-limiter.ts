/**
 * Request budget per key (a buyer, or a client address) of one gateway process: a fixed one-second
 * window, kept in memory so it costs no Redis call. It stops a client hammering an endpoint from taking
 * the event loop; the one-order-per-buyer rule itself is enforced by the reserve script, not here.
 *
 * Memory stays bounded: the counts are cleared when a new second starts, so the map never holds more
 * keys than the requests of one second (however many distinct buyers or addresses an attacker makes up).
 */
export class RateLimiter {
  private window = 0;
  private counts = new Map<string, number>();

  constructor(
    private readonly perSecond: number,
    /** A monotonic clock in ms: windows are this process's own intervals, never compared with another's. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Counts one request; false when the buyer is over budget for the current second. */
  take(buyer: string): boolean {
    const window = Math.floor(this.now() / 1000);
    if (window !== this.window) {
      this.window = window;
      this.counts.clear();
    }
    const count = (this.counts.get(buyer) ?? 0) + 1;
    this.counts.set(buyer, count);
    return count <= this.perSecond;
  }
}
