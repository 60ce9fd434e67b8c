import type { SaleStatus } from '@flashsale/domain';

/** The fields of a sale every representation has, wherever it was read from (Redis or MySQL). */
export interface SaleFields {
  id: number;
  name: string;
  stock: number;
  perUserLimit: number;
  /** Epoch ms. */
  startsAt: number;
  /** Epoch ms. */
  endsAt: number;
}

/** A sale as the HTTP API shows it; `live` adds what only a running sale has. */
export function saleView(sale: SaleFields, live?: { remaining: number; status: SaleStatus }) {
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
