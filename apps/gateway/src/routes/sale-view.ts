import type { SaleDefinition, SaleStatus } from '@flashsale/domain';

/** A sale as the HTTP API shows it; `live` adds what only a running sale has. */
export function saleView(sale: SaleDefinition, live?: { remaining: number; status: SaleStatus }) {
  return {
    id: sale.id,
    name: sale.name,
    stock: sale.stock,
    ...(live && { remaining: live.remaining }),
    startsAt: new Date(sale.startsAt).toISOString(),
    endsAt: new Date(sale.endsAt).toISOString(),
    perUserLimit: sale.perUserLimit,
    ...(live && { status: live.status }),
  };
}
