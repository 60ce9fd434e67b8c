import { signBuyerTokens } from './tokens.ts';
import { createHttpClient, mapConcurrently, type HttpClient } from './http-client.ts';

export interface BurstOutcome {
  /** Reservation id -> buyer and quantity, for every 202. */
  accepted: Map<string, { userId: string; quantity: number }>;
  /** Refusals by code (e.g. SOLD_OUT: 12). */
  refused: Record<string, number>;
  /** Buyers whose request got no answer (connection cut, gateway killed): it may or may not have landed. */
  unknown: Set<string>;
  /** Buyers answered 5xx other than SALE_PAUSED: the script may or may not have run (Redis died under it). */
  failed: Set<string>;
}

/**
 * Sends one purchase per buyer, `connections` at a time, and sorts the answers. Errors of the transport
 * are recorded as unknown outcomes, never thrown: the tests that kill processes count on them.
 */
export async function purchaseBurst(
  baseUrl: string | (() => string),
  saleId: number,
  buyers: string[],
  {
    connections = 32,
    quantity = () => 1,
    onAnswer,
    tokenTtlSeconds,
  }: { connections?: number; quantity?: (i: number) => number; onAnswer?: (done: number) => void; tokenTtlSeconds?: number } = {},
): Promise<BurstOutcome> {
  const outcome: BurstOutcome = { accepted: new Map(), refused: {}, unknown: new Set(), failed: new Set() };
  const tokens = signBuyerTokens(buyers, { ttlSeconds: tokenTtlSeconds });
  const clients = new Map<string, HttpClient>();
  const client = () => {
    const url = typeof baseUrl === 'string' ? baseUrl : baseUrl();
    if (!clients.has(url)) clients.set(url, createHttpClient(url, connections));
    return clients.get(url)!;
  };
  let done = 0;
  await mapConcurrently(
    buyers.map((userId, i) => ({ userId, token: tokens[i]!, quantity: quantity(i) })),
    connections,
    async ({ userId, token, quantity: q }) => {
      try {
        const res = await client().send('POST', `/api/sales/${saleId}/purchase`, {
          headers: { authorization: `Bearer ${token}` },
          body: { quantity: q },
        });
        if (res.status === 202) outcome.accepted.set(res.body.reservationId as string, { userId, quantity: q });
        // SALE_PAUSED is the script's own refusal (nothing written); other 5xx leave the outcome open.
        else if (res.status >= 500 && res.body.code !== 'SALE_PAUSED') outcome.failed.add(userId);
        else outcome.refused[String(res.body.code)] = (outcome.refused[String(res.body.code)] ?? 0) + 1;
      } catch {
        outcome.unknown.add(userId);
      }
      onAnswer?.(++done);
    },
  );
  for (const c of clients.values()) c.close();
  return outcome;
}

/** Merges bursts into one ledger input. */
export function mergeBursts(...bursts: BurstOutcome[]): BurstOutcome {
  const merged: BurstOutcome = { accepted: new Map(), refused: {}, unknown: new Set(), failed: new Set() };
  for (const b of bursts) {
    for (const [k, v] of b.accepted) merged.accepted.set(k, v);
    for (const [k, v] of Object.entries(b.refused)) merged.refused[k] = (merged.refused[k] ?? 0) + v;
    for (const u of b.unknown) merged.unknown.add(u);
    for (const u of b.failed) merged.failed.add(u);
  }
  return merged;
}
