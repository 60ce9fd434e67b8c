import { expect } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import { redisNow } from '@flashsale/redis-store';
import type { TestContext } from './context.ts';
import { bearer } from './http.ts';
import { until } from './until.ts';

/** What GET and POST /api/sales/:id/queue answer. */
export interface QueueBody {
  saleId: number;
  state: string;
  position: number | null;
  ahead: number | null;
  etaSeconds: number | null;
  admittedUntil: string | null;
  ticket: string | null;
}

export interface QueuedSaleOptions {
  stock?: number;
  perUserLimit?: number;
  /** Start, ms from Redis's clock now (default 1500). */
  startsIn?: number;
  /** End, ms from Redis's clock now (default an hour after the start). */
  endsIn?: number;
  preQueueSeconds?: number;
  admitPerSecond?: number;
  admissionTtlSeconds?: number;
  noShowFactor?: number;
  paymentWindowSeconds?: number;
  showUpSeconds?: number;
  challenge?: 'off' | 'pow' | 'auto';
  challengeMaxNumber?: number;
  requireClaim?: string;
  maxQueueSize?: number;
}

/** A sale behind the door, created through the admin API as an operator would. */
export async function createQueuedSale(
  ctx: TestContext,
  url: string,
  options: QueuedSaleOptions = {},
): Promise<{ id: number; startsAt: number; body: Record<string, unknown> }> {
  const now = await redisNow(ctx.redis);
  const startsAt = now + (options.startsIn ?? 1500);
  const { stock = 10, perUserLimit = 1, endsIn = (options.startsIn ?? 1500) + 3_600_000, paymentWindowSeconds, ...admission } = options;
  delete (admission as { startsIn?: number }).startsIn;
  // A test that sets the turn's length has that whole turn from the admission on, unless it asks for a
  // show-up window too (test/e2e/door-show-up.test.ts); a test of the defaults sets neither.
  if (admission.admissionTtlSeconds !== undefined) admission.showUpSeconds ??= admission.admissionTtlSeconds;
  const res = await fetch(`${url}/api/admin/sales`, {
    method: 'POST',
    headers: { ...bearer(ctx.config.ADMIN_TOKEN), 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'Queued sale',
      stock,
      perUserLimit,
      startsAt: new Date(startsAt).toISOString(),
      endsAt: new Date(now + endsIn).toISOString(),
      ...(paymentWindowSeconds !== undefined && { paymentWindowSeconds }),
      admission: { mode: 'queue', preQueueSeconds: 3600, ...admission },
    }),
  });
  const body = (await res.json()) as Record<string, unknown>;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return { id: body.id as number, startsAt, body };
}

/** A buyer of the door's tests: joins, asks, buys, each a real HTTP call (a long token for a gateway whose clock is ahead). */
export function doorBuyer(url: string, saleId: number, userId: string, tokenTtlSeconds?: number) {
  const headers = bearer(buyerToken(userId, tokenTtlSeconds === undefined ? {} : { ttlSeconds: tokenTtlSeconds }));
  let ticket: string | null = null;
  const read = async (res: Response) => {
    const body = (await res.json()) as QueueBody;
    if (res.status === 200 && body.ticket) ticket = body.ticket;
    return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
  };
  return {
    userId,
    get ticket() {
      return ticket;
    },
    /** The buyer's rank in the queue (0 = first), from the ticket an answer after the draw carries. */
    rank: async (): Promise<number> => {
      await read(
        await fetch(`${url}/api/sales/${saleId}/queue`, { headers: { ...headers, ...(ticket !== null && { 'queue-ticket': ticket }) } }),
      );
      const rank = ticket?.split('.')[4];
      if (rank === undefined || rank === '-') throw new Error(`no rank for ${userId} yet (ticket ${ticket})`);
      return Number(rank);
    },
    join: async () => read(await fetch(`${url}/api/sales/${saleId}/queue`, { method: 'POST', headers })),
    /** GET with the ticket last received (none before the first answer), or with `withTicket`. */
    status: async (withTicket: string | null = ticket) =>
      read(
        await fetch(`${url}/api/sales/${saleId}/queue`, {
          headers: { ...headers, ...(withTicket !== null && { 'queue-ticket': withTicket }) },
        }),
      ),
    /** POST /queue/here with the ticket last received: the buyer has come for the turn, which then runs its full length. */
    here: async () =>
      read(
        await fetch(`${url}/api/sales/${saleId}/queue/here`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', ...(ticket !== null && { 'queue-ticket': ticket }) },
          body: '{}',
        }),
      ),
    purchase: async (quantity = 1) => {
      const res = await fetch(`${url}/api/sales/${saleId}/purchase`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ quantity }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    /** Asks until the state is `state` (the door moves on each gateway read, at most every DOOR_FRONTIER_MAX_AGE_MS). */
    waitFor: (state: string, timeoutMs = 20_000) =>
      until(
        async () =>
          (
            await read(
              await fetch(`${url}/api/sales/${saleId}/queue`, {
                headers: { ...headers, ...(ticket !== null && { 'queue-ticket': ticket }) },
              }),
            )
          ).body,
        (body) => body.state === state,
        timeoutMs,
      ),
  };
}
