import { createHttpClient } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import type { ClusterSystem } from './system.ts';

/** What the admin stats say of a sale, as far as the cluster tests look. */
export interface SaleStats {
  remaining: number;
  consistent: boolean;
  lost: { reservations: number; units: number };
  audit: { drift: number; checkedAt: string } | null;
}

/** Creates sales until every master serves at least `perMaster` of them; each with the port of its master. */
export async function salesOnEveryMaster(
  system: ClusterSystem,
  perMaster: number,
  stock: number,
): Promise<{ id: number; master: number }[]> {
  const masters = (await system.cluster.masters()).map((m) => m.port);
  const sales: { id: number; master: number }[] = [];
  const count = (port: number) => sales.filter((s) => s.master === port).length;
  while (masters.some((port) => count(port) < perMaster)) {
    const id = await system.createSale({ stock, perUserLimit: 1 });
    sales.push({ id, master: (await system.cluster.masterOf(saleKeys(system.ctx.config.REDIS_PREFIX, id).meta)).port });
    if (sales.length > 60) throw new Error('sales do not spread over the masters');
  }
  return sales;
}

/** GET /api/admin/sales/:id/stats through the first gateway. */
export async function saleStats(system: Pick<ClusterSystem, 'gateways' | 'ctx'>, saleId: number): Promise<SaleStats> {
  const admin = createHttpClient(system.gateways[0]!.url, 1);
  try {
    const res = await admin.send('GET', `/api/admin/sales/${saleId}/stats`, {
      headers: { authorization: `Bearer ${system.ctx.config.ADMIN_TOKEN}` },
    });
    if (res.status !== 200) throw new Error(`stats of sale ${saleId}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as unknown as SaleStats;
  } finally {
    admin.close();
  }
}
