/** A verdict that holds for every buyer of a sale, so a gateway may give it without asking Redis. */
export type SaleVerdict = 'SOLD_OUT' | 'SALE_ENDED';

/**
 * What this gateway process knows for sure about a sale without asking Redis: that it is sold out or has
 * ended. Once a sale is sold out, every further purchase of the flash crowd is refused here, and Redis
 * only sees the buyers that can still change something.
 *
 * A verdict can become wrong: a reconciliation puts units back (reservations Redis lost return to stock).
 * Three guards keep a stale "sold out" from being served:
 * - the reconciler announces every change on the sale events channel, and `forget` drops the verdict;
 * - while the subscription is down (messages may be missed) nothing is cached, and on resubscribing
 *   everything is dropped (`forgetAll` + `setListening`);
 * - every verdict expires after `ttlMs` whatever happens, a safety net for an announcement lost anyway.
 * And a race: a script reply that was computed before a rebuild but arrives after its announcement must
 * not be cached. `ticket()` is taken before the Redis call; `remember` refuses a ticket older than the
 * last invalidation.
 */
export class SaleVerdictCache {
  private readonly verdicts = new Map<number, { verdict: SaleVerdict; expiresAt: number }>();
  private invalidations = 0;
  private listening = false;

  constructor(
    /** How long a verdict is trusted without news, in ms. */
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The verdict on a sale, if one is known and fresh. */
  get(saleId: number): SaleVerdict | undefined {
    const entry = this.verdicts.get(saleId);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.verdicts.delete(saleId);
      return undefined;
    }
    return entry.verdict;
  }

  /** Taken before asking Redis; hand it back to `remember` with the answer. */
  ticket(): number {
    return this.invalidations;
  }

  /** Records a verdict Redis gave, unless something changed since `ticket` was taken. */
  remember(saleId: number, verdict: SaleVerdict, ticket: number): void {
    if (!this.listening || ticket !== this.invalidations) return;
    this.verdicts.set(saleId, { verdict, expiresAt: this.now() + this.ttlMs });
  }

  /** The sale changed (announced by the reconciler): its verdict no longer holds. */
  forget(saleId: number): void {
    this.invalidations += 1;
    this.verdicts.delete(saleId);
  }

  forgetAll(): void {
    this.invalidations += 1;
    this.verdicts.clear();
  }

  /** Whether announcements reach this process; without them verdicts are neither kept nor made. */
  setListening(listening: boolean): void {
    this.listening = listening;
    this.forgetAll();
  }

  get size(): number {
    return this.verdicts.size;
  }
}
