import { AppError, parseSaleId } from '@flashsale/domain';
import { findSale } from '@flashsale/order-store';
import { recentDeadLettersByReason, readSaleState, redisNow, redisTargetOf, saleKeys, streamBacklog } from '@flashsale/redis-store';
import { openQueueCounts, reconcileJobId } from '@flashsale/jobs';
import type { GatewayDeps } from '../deps.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { adminSaleView } from '../controls/admin-sale-view.ts';
import { listAdminSales } from '../controls/sale-list.ts';
import { readSaleStats } from '../routes/sale-stats.ts';
import { TrafficSampler } from './traffic-sampler.ts';

/**
 * What the dashboard's topics hold, read from the stores each time (LiveFeed calls it once per interval
 * per topic, for every page watching):
 * - `overview`: the newest sales with their live state, the BullMQ queues' counts (the queue view), this
 *   process's purchases per second by outcome and latency;
 * - `sale:<id>`: the sale, its ledger as GET .../stats answers it (passed on whole: members added there
 *   show on the page), the stream's backlog (lag: not yet delivered; pending: delivered, not written),
 *   units accepted per second (from Redis: every gateway's), the last dead letters by reason, and its
 *   reconciliation job.
 */
export function createLiveViews(deps: GatewayDeps, metrics: GatewayMetrics) {
  const { redis, prisma, config, jobs } = deps;
  const prefix = config.REDIS_PREFIX;
  const traffic = new TrafficSampler(metrics);
  const accepted = new Map<number, { at: number; units: number }>();
  const queues = openQueueCounts(redisTargetOf(config), prefix);

  async function overview() {
    const [page, counts, purchases] = await Promise.all([listAdminSales({ redis, prisma, prefix }, { limit: 20 }), queues.read(), traffic.sample()]);
    return { at: new Date().toISOString(), sales: page.sales, queues: counts, purchases };
  }

  async function sale(saleId: number) {
    const [record, state, now, stats, backlog, deadLetters, job] = await Promise.all([
      findSale(prisma, saleId),
      readSaleState(redis, prefix, saleId),
      redisNow(redis, saleKeys(prefix, saleId).meta),
      readSaleStats(deps, saleId),
      streamBacklog(redis, prefix, saleId),
      recentDeadLettersByReason(redis, prefix, saleId),
      jobs.queue.getJob(reconcileJobId(saleId)),
    ]);
    if (!record) throw new AppError('SALE_NOT_FOUND', `no sale has the id ${saleId}`);
    const units = state ? state.stock - state.remaining : null;
    const previous = accepted.get(saleId);
    if (units !== null) accepted.set(saleId, { at: now, units });
    const unitsPerSecond = previous && units !== null && now > previous.at ? Math.max(0, Math.round(((units - previous.units) * 1000) / (now - previous.at))) : null;
    return {
      sale: adminSaleView(record, state, now),
      stats,
      backlog: { lag: backlog.lag, pending: backlog.pending },
      unitsAcceptedPerSecond: unitsPerSecond,
      deadLetters,
      reconciliation: job
        ? { state: await job.getState(), reason: job.data.reason, finishedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : null, result: job.returnvalue ?? null }
        : null,
    };
  }

  return {
    read(topic: string): Promise<unknown> {
      if (topic === 'overview') return overview();
      const saleId = topic.startsWith('sale:') ? parseSaleId(topic.slice(5)) : null;
      if (saleId === null) throw new AppError('SALE_NOT_FOUND', `no such view: ${topic}`);
      return sale(saleId);
    },
    async close(): Promise<void> {
      await queues.close();
    },
  };
}

export type LiveViews = ReturnType<typeof createLiveViews>;
