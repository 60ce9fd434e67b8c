import { AppError, parseSaleId } from '@flashsale/domain';
import { queueCountsOf } from '@flashsale/bootstrap';
import type { GatewayDeps } from '../deps.ts';
import { storeFailures } from '@flashsale/sales';
import type { SaleHistory } from './sale-history.ts';
import { readDoorPanel, type DoorPanel } from './door-view.ts';

/**
 * What the dashboard's topics hold, read from the stores each time (LiveFeed calls it once per interval
 * per topic, for every page watching). Every MySQL read goes through the dashboard's own pool
 * (`dashboardSales`, over DASHBOARD_DB_POOL_SIZE), never the buyers' (GATEWAY_DB_POOL_SIZE):
 * - `overview`: the newest sales with their live state, the BullMQ queues' counts (the queue view), this
 *   process's purchases per second by outcome and latency (the history's newest point);
 * - `sale:<id>`: the sale (its remaining the ledger's own read), its ledger as GET .../stats answers it, the stream's backlog (lag: not yet
 *   delivered; pending: delivered, not written), units accepted per second (from Redis: every
 *   gateway's), the last dead letters by reason, its reconciliation job, its door (a queued sale:
 *   door-view.ts; null for an open one), and the newest points of its history and the process's (the
 *   page appends them to the history it got when its stream opened).
 */
export function createLiveViews(deps: GatewayDeps, history: SaleHistory, shadowJoins: (saleId: number) => DoorPanel['shadowJoins']) {
  const { config, dashboardSales: sales } = deps;
  const queues = queueCountsOf(config);
  // Enough points to bridge two pushes, and a little more should one push come late.
  const recent = Math.ceil(config.DASHBOARD_INTERVAL_MS / config.DASHBOARD_HISTORY_STEP_MS) + 2;

  async function overview() {
    const [page, counts] = await Promise.all([sales.listAdminSales({ limit: 20 }), queues.read()]);
    return {
      at: new Date().toISOString(),
      sales: page.sales,
      queues: counts,
      purchases: history.process.latest() ?? null,
      processHistory: history.process.points(recent),
    };
  }

  async function sale(saleId: number) {
    const [view, stats, backlog, deadLetters, reconciliation] = await Promise.all([
      sales.readAdminSale(saleId),
      sales.readSaleStats(saleId),
      sales.saleBacklog(saleId),
      sales.recentDeadLettersByReason(saleId),
      sales.lastReconciliation(saleId),
    ]);
    if (!view) throw new AppError('SALE_NOT_FOUND', { saleId });
    const door = await readDoorPanel(sales, saleId, view.admission, shadowJoins(saleId));
    const points = history.salePoints(saleId, recent);
    return {
      // One read of remaining for every panel that shows it (the header, the ledger, the sale's row in
      // the list): the ledger's, taken after its MySQL counts. Two reads a few milliseconds apart showed
      // two figures side by side mid-sale.
      at: new Date().toISOString(),
      sale: stats.remaining === null ? view.sale : { ...view.sale, remaining: stats.remaining },
      stats,
      backlog: { lag: backlog.lag, pending: backlog.pending },
      unitsAcceptedPerSecond: points?.series.acceptedPerSecond?.at(-1) ?? null,
      deadLetters,
      reconciliation,
      history: points ?? null,
      door,
    };
  }

  return {
    async read(topic: string): Promise<unknown> {
      const saleId = topic.startsWith('sale:') ? parseSaleId(topic.slice(5)) : null;
      if (topic !== 'overview' && saleId === null) throw new AppError('SALE_NOT_FOUND', { because: 'view', topic });
      try {
        return await (saleId === null ? overview() : sale(saleId));
      } catch (error) {
        // What the page shows of a failed read: which store, in words, never a driver's message (the
        // LiveFeed logs the whole error).
        if (storeFailures.isMysqlUnavailable(error)) throw new Error('MySQL did not answer in time', { cause: error });
        if (storeFailures.isRedisUnavailable(error)) throw new Error('Redis did not answer in time', { cause: error });
        throw error;
      }
    },
    /** Whether MySQL holds the sale: asked before a stream of it opens. */
    async saleExists(saleId: number): Promise<boolean> {
      return sales.saleExists(saleId);
    },
    /** What a page gets when its stream opens: the whole history of the sale it shows and of the process. */
    snapshot(saleId: number | null) {
      return {
        stepMs: config.DASHBOARD_HISTORY_STEP_MS,
        windowMs: config.DASHBOARD_HISTORY_SECONDS * 1000,
        process: history.process.points(),
        sale: saleId === null ? null : (history.salePoints(saleId) ?? null),
      };
    },
    async close(): Promise<void> {
      await queues.close();
    },
  };
}

export type LiveViews = ReturnType<typeof createLiveViews>;
