import type { WatchedSale } from '@flashsale/sales';

export interface WatchRotaOptions {
  /** A sale that changed at its last look is looked at again this soon (RECONCILER_WATCH_MS). */
  everyMs: number;
  /** The most sales looked at per second (RECONCILER_WATCH_PER_SECOND). */
  perSecond: number;
}

interface Entry {
  sale: WatchedSale;
  due: number;
}

/**
 * When the reconciler looks at each live sale, so that its cost is bounded whatever the number of sales:
 * at most `perSecond` sales a second, the most overdue first. A sale that changed at its last look (it
 * took purchases, or is paused, or needs reconciling) is due again `everyMs` later; one that did not is
 * due again after a whole round, max(everyMs, sales / perSecond): with 500 sales or fewer (the defaults)
 * every sale is looked at every second, with 10,000 each idle one every 20 s. A new sale is due at once.
 *
 * It also keeps the latest record of each sale (the checkpoint the last look recorded), so a look need
 * not read MySQL first; the list is read again once per round (roundMs). Times are monotonic ms.
 */
export class WatchRota {
  private entries = new Map<number, Entry>();
  private credit = 0;
  private creditAt: number | undefined;

  constructor(private readonly options: WatchRotaOptions) {}

  /** Sales being watched. */
  get size(): number {
    return this.entries.size;
  }

  saleIds(): number[] {
    return [...this.entries.keys()];
  }

  /** How long a whole round takes: how often the list is read again, and an idle sale looked at. */
  roundMs(): number {
    return Math.max(this.options.everyMs, (this.entries.size * 1000) / this.options.perSecond);
  }

  /**
   * The sales to watch, as MySQL lists them now (read after every earlier look had finished, so no record
   * here is newer). A sale new to the list is due at once; one no longer listed is forgotten.
   */
  setSales(sales: WatchedSale[], now: number): void {
    const next = new Map<number, Entry>();
    for (const sale of sales) next.set(sale.id, { sale, due: this.entries.get(sale.id)?.due ?? now });
    this.entries = next;
  }

  /** The sales to look at now: due ones, most overdue first, within the rate. */
  due(now: number): WatchedSale[] {
    // The first call looks at up to one second's worth at once, as a start should; later ones earn
    // credit at the rate, never more than one look per sale saved up.
    const elapsed = this.creditAt === undefined ? 1000 : Math.max(0, now - this.creditAt);
    this.creditAt = now;
    this.credit = Math.min(Math.max(1, this.entries.size), this.credit + (this.options.perSecond * elapsed) / 1000);
    const overdue: Entry[] = [];
    for (const entry of this.entries.values()) if (entry.due <= now) overdue.push(entry);
    overdue.sort((a, b) => a.due - b.due);
    const taken = overdue.slice(0, Math.floor(this.credit));
    this.credit -= taken.length;
    return taken.map((entry) => entry.sale);
  }

  /** A look at the sale ended: `sale` is its latest record; `changed` whether it changed since the last. */
  visited(sale: WatchedSale, now: number, changed: boolean): void {
    const entry = this.entries.get(sale.id);
    if (!entry) return;
    entry.sale = sale;
    entry.due = now + (changed ? this.options.everyMs : this.roundMs());
  }
}
