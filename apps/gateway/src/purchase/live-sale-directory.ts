import type { Logger } from '@flashsale/runtime';
import type { Sales } from '@flashsale/sales';

/**
 * The sales MySQL knows as not yet ended, kept in memory and refreshed in the background, never read
 * from MySQL on the purchase path. It tells apart the two meanings of the reserve script's "sale not
 * found": no such sale (404), or a live sale whose Redis state was lost and is being rebuilt by the
 * reconciler (503 SALE_PAUSED, retry shortly). A sale created since the last refresh is unknown here
 * for up to one period; it is in Redis anyway unless Redis lost it within that time.
 */
export class LiveSaleDirectory {
  /** Each live sale's end, on this process's monotonic clock (performance.now()), from MySQL's time left. */
  private endById = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  /** The refresh under way, if any: a tick that finds one skips its turn. */
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly sales: Pick<Sales, 'listLiveSales'>,
    private readonly logger: Logger,
    /** Refresh period in ms (LIVE_SALES_REFRESH_MS). */
    private readonly refreshMs: number,
  ) {}

  /** Whether MySQL holds this sale and it has not ended, as of the last refresh. */
  isLive(saleId: number): boolean {
    const end = this.endById.get(saleId);
    return end !== undefined && performance.now() < end;
  }

  /** The sales live as of the last refresh (the dashboard's history follows them; never the purchase path). */
  liveSaleIds(): number[] {
    const now = performance.now();
    return [...this.endById].filter(([, end]) => now < end).map(([id]) => id);
  }

  async refresh(): Promise<void> {
    // MySQL says how long each sale has left; this process only measures that interval, never compares
    // its own wall clock with the sale's end (a gateway whose clock runs ahead would answer 404 for a
    // live sale being rebuilt, one behind 503 for a sale long ended).
    const asked = performance.now();
    const rows = await this.sales.listLiveSales();
    this.endById = new Map(rows.map((row) => [row.id, asked + row.msLeft]));
  }

  /**
   * Loads once (a failure is logged, not fatal: MySQL may come later), then refreshes every period. A
   * period that ends with the last refresh still waiting for MySQL starts none: a slow MySQL gets one
   * query at a time from each gateway process, and the process one pooled connection for it, where
   * refreshes piling up would each hold one (an idle gateway process was seen keeping three for a minute
   * on a busy machine; this is one way there).
   */
  async start(): Promise<void> {
    await this.refreshLogged();
    this.timer = setInterval(() => {
      if (this.refreshing) return;
      this.refreshing = this.refreshLogged().finally(() => (this.refreshing = undefined));
    }, this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async refreshLogged(): Promise<void> {
    // On failure the last known list stays: a MySQL hiccup must not turn paused sales into 404s.
    await this.refresh().catch((error: unknown) => this.logger.warn({ err: error }, 'live sale directory refresh failed'));
  }
}
