import type { OrderStore, SaleRecord } from '@flashsale/order-store';

/** The most ids one process remembers as missing: a flood of distinct made-up ids is the address budget's to stop. */
const MAX_REMEMBERED = 100_000;

/**
 * Ids MySQL has no sale of, remembered briefly by one gateway process, so that an unknown id asked again
 * and again (a page polled, a flood) costs MySQL one query per `ttlMs` rather than one per request.
 *
 * A remembered miss can become wrong: the sale is created (on any gateway process). Guards, as the
 * verdict cache's: a creation is announced on the sale events channel and `forget` drops the id; while
 * the subscription is down nothing is remembered, and on resubscribing everything is dropped; a miss
 * expires after `ttlMs` whatever happens; and a miss read before an announcement that arrives after it is
 * not remembered (`ticket()` taken before the read).
 */
export class SaleMisses {
  private readonly misses = new Map<number, number>();
  /** Finds on their way to MySQL, shared by the requests for the same id meanwhile (a flood arrives many at once). */
  readonly finding = new Map<number, Promise<SaleRecord | null>>();
  private invalidations = 0;
  private listening = false;

  constructor(
    private readonly ttlMs: number,
    /** A monotonic clock in ms. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether MySQL was found to hold no sale of this id within the last `ttlMs`. */
  has(saleId: number): boolean {
    const until = this.misses.get(saleId);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.misses.delete(saleId);
    return false;
  }

  ticket(): number {
    return this.invalidations;
  }

  remember(saleId: number, ticket: number): void {
    if (!this.listening || this.ttlMs === 0 || ticket !== this.invalidations) return;
    // The oldest goes first (a Map keeps insertion order): memory stays bounded whatever the flood.
    if (this.misses.size >= MAX_REMEMBERED) this.misses.delete(this.misses.keys().next().value!);
    this.misses.set(saleId, this.now() + this.ttlMs);
  }

  forget(saleId: number): void {
    this.invalidations += 1;
    this.misses.delete(saleId);
  }

  forgetAll(): void {
    this.invalidations += 1;
    this.misses.clear();
  }

  /** On while announcements are heard; switched either way, everything remembered is dropped. */
  setListening(listening: boolean): void {
    this.forgetAll();
    this.listening = listening;
  }
}

/**
 * MySQL's record of a sale, or null, asking MySQL only for an id not remembered as missing (see
 * SaleMisses), and once for all the requests that ask for the same id while the query is on its way.
 */
export async function findSaleUnlessMissing(mysql: OrderStore, misses: SaleMisses | undefined, saleId: number): Promise<SaleRecord | null> {
  if (!misses) return mysql.sale(saleId).find();
  if (misses.has(saleId)) return null;
  const already = misses.finding.get(saleId);
  if (already) return already;
  const ticket = misses.ticket();
  const finding = mysql
    .sale(saleId)
    .find()
    .then((record) => {
      if (!record) misses.remember(saleId, ticket);
      return record;
    });
  misses.finding.set(saleId, finding);
  try {
    return await finding;
  } finally {
    misses.finding.delete(saleId);
  }
}
