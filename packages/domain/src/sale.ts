import type { DoorTerms } from './door-terms.ts';
import type { RebuyRule } from './rebuy-rule.ts';

/** A sale as published: what both MySQL and Redis know of it. Times are epoch milliseconds. */
export interface SaleDefinition {
  id: number;
  name: string;
  stock: number;
  perUserLimit: number;
  startsAt: number;
  endsAt: number;
  /** The waiting room, when the sale has one (absent: open, a race as ever). */
  admission?: DoorTerms;
  /** The rebuy rule; every sale created has one (absent only where a test publishes a bare sale). */
  rebuyRule?: RebuyRule;
}

/** Largest sale id the system accepts in paths (MySQL INT). */
export const MAX_SALE_ID = 2_147_483_647;

/** Parses a sale id from a URL path segment; null for anything but a canonical positive integer. */
export function parseSaleId(raw: string): number | null {
  if (!/^[1-9][0-9]{0,9}$/.test(raw)) return null;
  const id = Number(raw);
  return id <= MAX_SALE_ID ? id : null;
}

/** The most units a sale may hold in all (MySQL INT, with room): bounds a create and every stock added later. */
export const MAX_STOCK = 1_000_000_000;

/**
 * The most units one buyer may take in one sale: the bound of both a sale's `perUserLimit` (admin) and a
 * purchase's `quantity` (gateway), so the two can never disagree.
 */
export const MAX_PER_USER_LIMIT = 1_000_000;

/**
 * The last instant a MySQL DATETIME(3) holds, 9999-12-31 23:59:59.999 UTC, in epoch ms: the bound of every
 * time the system stores (a sale's window, a reservation's time, an order's payBy).
 */
export const LAST_DATETIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * The earliest and latest instants a sale may start or end at. MySQL's DATETIME goes back to year 1000,
 * but its drivers read years 0000-0099 back as 20xx, and no sale runs before 2000 or after 9999: one
 * range, enforced when the sale is created, keeps MySQL and Redis agreeing on the window.
 */
export const SALE_TIME_RANGE = { min: Date.UTC(2000, 0, 1), max: LAST_DATETIME_MS } as const;
