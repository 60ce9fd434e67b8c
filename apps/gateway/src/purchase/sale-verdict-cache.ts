/** A verdict that holds for every buyer of a sale but its holders, so a gateway may give it without asking Redis. */
export type SaleVerdict = 'SOLD_OUT' | 'SALE_ENDED';

/**
 * A verdict and the buyers it does not apply to: those who hold a reservation are told so (409
 * ALREADY_PURCHASED with its id, as the reserve script would), so a buyer who took the last unit and
 * retries after a dropped connection learns they won. A sale that takes no more buyers only changes
 * them in a rebuild, which is announced, so the list stays true as long as the verdict does.
 */
export interface KnownVerdict {
  verdict: SaleVerdict;
  /** Buyer id -> the reservation id they hold. */
  holders: ReadonlyMap<string, string>;
}

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
/** Reads a sale's holders (buyer -> reservation id); null when there are too many to keep in memory. */
export type HoldersLoader = (saleId: number) => Promise<ReadonlyMap<string, string> | null>;

/** How long a sale with too many holders to keep is not asked for them again. */
const TOO_MANY_HOLDERS_BACKOFF_MS = 60_000;

export class SaleVerdictCache {
  private readonly verdicts = new Map<number, KnownVerdict & { expiresAt: number }>();
  private readonly learning = new Set<number>();
  /** Sales whose holders are too many to keep: answered by the reserve script, until the time given. */
  private readonly tooManyHolders = new Map<number, number>();
  private invalidations = 0;
  private listening = false;

  constructor(
    /** How long a verdict is trusted without news, in ms. */
    private readonly ttlMs: number,
    /** A monotonic clock in ms (the TTL is this process's own interval; a wall clock may be stepped). */
    private readonly now: () => number = () => performance.now(),
    private readonly loadHolders?: HoldersLoader,
  ) {}

  /**
   * Redis gave a verdict (the reply that took the last unit, or a refusal): reads the sale's holders in
   * the background and keeps the verdict with them. Until they are read, purchases keep going to Redis,
   * whose answers are right for holders and everyone else alike. A failed read is not retried here: the
   * next refusal asks again.
   */
  learn(saleId: number, verdict: SaleVerdict, ticket: number): void {
    if (!this.loadHolders || !this.listening || this.ttlMs <= 0 || this.learning.has(saleId)) return;
    if ((this.tooManyHolders.get(saleId) ?? 0) > this.now()) return;
    this.learning.add(saleId);
    this.loadHolders(saleId)
      .then(
        (holders) => {
          if (holders) this.remember(saleId, verdict, ticket, holders);
          else this.tooManyHolders.set(saleId, this.now() + TOO_MANY_HOLDERS_BACKOFF_MS);
        },
        () => undefined,
      )
      .finally(() => this.learning.delete(saleId));
  }

  /** The verdict on a sale and its holders, if known and fresh. */
  get(saleId: number): KnownVerdict | undefined {
    const entry = this.verdicts.get(saleId);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.verdicts.delete(saleId);
      return undefined;
    }
    return entry;
  }

  /** Whether a verdict taken now could be kept (announcements reach this process). */
  get isListening(): boolean {
    return this.listening;
  }

  /** Taken before asking Redis; hand it back to `remember` with the answer. */
  ticket(): number {
    return this.invalidations;
  }

  /**
   * Records a verdict Redis gave and the sale's holders read after it, unless something changed since
   * `ticket` was taken (before the Redis call that gave the verdict).
   */
  remember(saleId: number, verdict: SaleVerdict, ticket: number, holders: ReadonlyMap<string, string>): void {
    if (!this.listening || ticket !== this.invalidations) return;
    this.verdicts.set(saleId, { verdict, holders, expiresAt: this.now() + this.ttlMs });
  }

  /** The sale changed (announced by the reconciler): its verdict no longer holds. */
  forget(saleId: number): void {
    this.invalidations += 1;
    this.verdicts.delete(saleId);
    this.tooManyHolders.delete(saleId);
  }

  forgetAll(): void {
    this.invalidations += 1;
    this.verdicts.clear();
    this.tooManyHolders.clear();
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
