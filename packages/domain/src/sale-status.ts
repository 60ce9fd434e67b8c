export type SaleStatus = 'scheduled' | 'active' | 'sold_out' | 'ended' | 'paused';

export interface SaleClockView {
  startsAt: number;
  endsAt: number;
  remaining: number;
  paused: boolean;
}

/**
 * The status a buyer sees, in the order the reserve script checks: an ended sale is ended even when
 * paused or sold out, a paused one is paused whatever its stock. Window is [startsAt, endsAt).
 */
export function saleStatus(sale: SaleClockView, now: number): SaleStatus {
  if (now >= sale.endsAt) return 'ended';
  if (sale.paused) return 'paused';
  if (now < sale.startsAt) return 'scheduled';
  if (sale.remaining <= 0) return 'sold_out';
  return 'active';
}
