import type { Logger } from '@flashsale/config';
import type { PrismaClient } from '@flashsale/order-store';

/**
 * The sales MySQL knows as not yet ended, kept in memory and refreshed in the background, never read
 * from MySQL on the purchase path. It tells apart the two meanings of the reserve script's "sale not
 * found": no such sale (404), or a live sale whose Redis state was lost and is being rebuilt by the
 * reconciler (503 SALE_PAUSED, retry shortly). A sale created since the last refresh is unknown here
 * for up to one period; it is in Redis anyway unless Redis lost it within that time.
 */
export class LiveSaleDirectory {
  private endsAtById = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly logger: Logger,
    /** Refresh period in ms. */
    private readonly refreshMs = 2000,
  ) {}

  /** Whether MySQL holds this sale and it has not ended, as of the last refresh. */
  isLive(saleId: number, now = Date.now()): boolean {
    const endsAt = this.endsAtById.get(saleId);
    return endsAt !== undefined && now < endsAt;
  }

  async refresh(): Promise<void> {
    const rows = await this.prisma.sale.findMany({ where: { endsAt: { gt: new Date() }, publishState: 'published' }, select: { id: true, endsAt: true } });
    this.endsAtById = new Map(rows.map((row) => [row.id, row.endsAt.getTime()]));
  }

  /** Loads once (a failure is logged, not fatal: MySQL may come later), then refreshes every period. */
  async start(): Promise<void> {
    await this.refreshLogged();
    this.timer = setInterval(() => void this.refreshLogged(), this.refreshMs);
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
