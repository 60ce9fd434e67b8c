/** A sale as published: what both MySQL and Redis know of it. Times are epoch milliseconds. */
export interface SaleDefinition {
  id: number;
  name: string;
  stock: number;
  perUserLimit: number;
  startsAt: number;
  endsAt: number;
}

/** Largest sale id the system accepts in paths (MySQL INT). */
export const MAX_SALE_ID = 2_147_483_647;

/** Parses a sale id from a URL path segment; null for anything but a canonical positive integer. */
export function parseSaleId(raw: string): number | null {
  if (!/^[1-9][0-9]{0,9}$/.test(raw)) return null;
  const id = Number(raw);
  return id <= MAX_SALE_ID ? id : null;
}
