import type { PrismaClient } from './generated/prisma/client.ts';
import { toSaleRecord, type SaleRecord } from './sale-repository.ts';

/** One page of the sales list: newest first, and where the next page starts (null on the last). */
export interface SalePage {
  sales: SaleRecord[];
  /** The id the next page starts below: pass it back as `before`. */
  next: number | null;
}

/**
 * Published sales, newest first (highest id first: ids are given in creation order), `limit` at most,
 * those with an id below `before` when given. Keyset paging on the primary key: a page costs the same
 * however deep it is, and a sale created meanwhile shifts no page.
 */
export async function listSalesPage(prisma: PrismaClient, { limit, before }: { limit: number; before?: number }): Promise<SalePage> {
  const rows = await prisma.sale.findMany({
    where: { publishState: 'published', ...(before !== undefined && { id: { lt: before } }) },
    orderBy: { id: 'desc' },
    take: limit + 1,
  });
  const sales = rows.slice(0, limit).map(toSaleRecord);
  return { sales, next: rows.length > limit ? sales[sales.length - 1]!.id : null };
}
