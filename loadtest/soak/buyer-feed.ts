/**
 * Every request of a soak is a purchase by a new buyer, and a run of ten minutes makes millions of them:
 * more tokens than are worth signing up front or holding in memory. The buyers are numbered instead
 * (`s<run>-<10 digits>`, all of one width), their tokens signed in batches as the load goes, and each
 * purchase written as a complete HTTP request of a fixed size, so wrk's Lua hands them out without
 * building a string (loadtest/soak/purchase-feed.lua) and the Node pacer reads the same buyers.
 */
import { signBuyerTokens } from '@flashsale/harness';

export interface BuyerFeedOptions {
  /** A short tag of the run, part of every buyer id (letters and digits, fixed for the run). */
  runId: string;
  secret: string;
  /** Seconds each token is valid for: the whole run and a margin. */
  ttlSeconds: number;
}

export interface Buyer {
  id: string;
  token: string;
}

/** The id of the i-th buyer of a run: one width for every i below 10^10. */
export function buyerId(runId: string, index: number): string {
  return `s${runId}-${String(index).padStart(10, '0')}`;
}

/** Signs the buyers [from, from + count) of a run. */
export function signBuyers({ runId, secret, ttlSeconds }: BuyerFeedOptions, from: number, count: number): Buyer[] {
  const ids = Array.from({ length: count }, (_, i) => buyerId(runId, from + i));
  const tokens = signBuyerTokens(ids, { secret, ttlSeconds });
  return ids.map((id, i) => ({ id, token: tokens[i]! }));
}

/**
 * A purchase as the raw HTTP/1.1 request wrk writes: no body (quantity 1), keep-alive. Every buyer's
 * token has the same length (ids of one width, `iat` and `exp` of ten digits), so every request too.
 */
export function purchaseRequest(host: string, saleId: number, token: string): string {
  return `POST /api/sales/${saleId}/purchase HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\n\r\n`;
}
