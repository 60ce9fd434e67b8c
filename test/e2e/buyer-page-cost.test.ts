import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buyerToken, startRedisServer, type RedisServer } from '@flashsale/harness';
import { createTestContext, redisNow, type TestContext } from '../support/context.ts';
import { commandCounts, commandsBetween } from '../support/command-stats.ts';
import { startGateway, type TestGateway } from '../support/gateway.ts';
import { createQueuedSale, doorBuyer } from '../support/door.ts';
import { until } from '../support/until.ts';

// 500 buyer pages waiting on one gateway, each running the page's own waiting code (public/buyer/
// buyer-api.js, the module the page imports) in Node: what their polls cost Redis, counted by a
// redis-server of the test's own (nothing else talks to it), and whether each page waits as long as
// every answer's Retry-After asks before it asks again.

interface Answer {
  status: number;
  body: { state: string; ticket: string | null } | null;
  retryAfter: number | null;
}
interface BuyerApiModule {
  createBuyerApi(options: { base: string; saleId: number; token: string; fetchImpl: typeof fetch }): {
    join(): Promise<Answer>;
    status(ticket: string | null): Promise<Answer>;
  };
  waitInLine(options: {
    api: { status(ticket: string | null): Promise<Answer> };
    tickets: { get(): string | null; set(ticket: string): void };
    sleep(ms: number): Promise<unknown>;
    onAnswer?(answer: Answer): void;
  }): Promise<Answer>;
}
const PAGES = 500;
const WATCH_MS = 13_000;

let server: RedisServer;
let ctx: TestContext;
let gateway: TestGateway;

beforeAll(async () => {
  server = await startRedisServer();
  // One client address for 500 pages: the per-address budgets off, as behind a proxy that caps.
  ctx = createTestContext({
    REDIS_URL: server.url,
    DOOR_FRONTIER_MAX_AGE_MS: '5000',
    RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0',
    QUEUE_JOINS_PER_ADDRESS_PER_SECOND: '0',
    MAX_CONNECTIONS_PER_ADDRESS: '0',
  });
  gateway = await startGateway(ctx);
  // The gateway's one Redis reader on a timer (the dashboard history) would be counted with the polls.
  await gateway.gateway.history.stop();
});
afterAll(async () => {
  await gateway.close();
  await ctx.close();
  await server.stop();
});

describe('500 buyer pages waiting on one gateway', () => {
  it('poll with their tickets at no Redis call of their own, and never sooner than the Retry-After of the answer before', async () => {
    const buyerApi = (await import(new URL('../../apps/gateway/public/buyer/buyer-api.js', import.meta.url).href)) as BuyerApiModule;
    // One unit, one admitted buyer holding it (noShowFactor 1): every page waits, told when to ask again.
    // The room opens at the start (no pre-queue): the holder first, then the pages, in arrival order.
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, {
      stock: 1,
      startsIn: 1000,
      preQueueSeconds: 0,
      admitPerSecond: 50,
      noShowFactor: 1,
    });
    const requests: { page: number; at: number; retryAfter: number | null; status: number; watched: boolean }[] = [];
    // The joins and the first polls are the test's setting up, one page after another; the pages' own
    // pacing is judged from the watch on.
    let watching = false;
    const pages = Array.from({ length: PAGES }, (_, page) => {
      const fetchImpl: typeof fetch = async (input, init) => {
        // A request the network lost (a keep-alive connection closed by the server as it was reused, on a
        // loaded machine) is sent again, as the page does (page.js's ask): joins and polls are idempotent.
        let res: Response;
        for (let attempt = 1; ; attempt++) {
          try {
            res = await fetch(input, init);
            break;
          } catch (error) {
            if (attempt === 3) throw error;
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        }
        requests.push({
          page,
          at: performance.now(),
          retryAfter: res.headers.has('retry-after') ? Number(res.headers.get('retry-after')) : null,
          status: res.status,
          watched: watching,
        });
        return res;
      };
      let ticket: string | null = null;
      return {
        api: buyerApi.createBuyerApi({ base: gateway.url, saleId: id, token: buyerToken(`cost-page-${page}`), fetchImpl }),
        tickets: { get: () => ticket, set: (value: string) => void (ticket = value) },
      };
    });
    await until(
      () => redisNow(ctx.redis),
      (now) => now >= startsAt + 100,
    );
    // The unit's holder joins first: admitted at once, there for the turn (so its turn runs its full length
    // rather than lapsing after the show-up window), and holding the unit it does not buy.
    const holder = doorBuyer(gateway.url, id, 'cost-holder');
    expect((await holder.join()).status).toBe(200);
    await holder.waitFor('admitted');
    expect((await holder.here()).status).toBe(200);
    for (const page of pages) {
      const joined = await page.api.join();
      expect(joined.status).toBe(200);
      page.tickets.set(joined.body!.ticket!);
    }
    // Each page's first answer after the draw reads its rank once; the ticket carries it from then on.
    for (const page of pages) {
      const first = await page.api.status(page.tickets.get());
      expect(first.status).toBe(200);
      page.tickets.set(first.body!.ticket!);
    }

    let stopping = false;
    const polls = { count: 0 };
    const before = await commandCounts(server.url);
    const started = performance.now();
    watching = true;
    // Each page waits as the page does, until it is admitted or the watch is over (its sleep ends early then).
    const sleepers = new Set<() => void>();
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        if (stopping) return resolve();
        const timer = setTimeout(() => {
          sleepers.delete(wake);
          resolve();
        }, ms);
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        sleepers.add(wake);
      });
    const waits = pages.map((page) =>
      buyerApi.waitInLine({
        api: { status: (ticket) => (stopping ? Promise.resolve({ status: 0, body: null, retryAfter: null }) : page.api.status(ticket)) },
        tickets: page.tickets,
        sleep,
        onAnswer: (answer) => {
          if (answer.status === 200) polls.count += 1;
        },
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, WATCH_MS));
    stopping = true;
    for (const wake of sleepers) wake();
    const outcomes = await Promise.all(waits);
    const after = await commandCounts(server.url);
    const elapsedMs = performance.now() - started;

    // Polls: each page at once, then as often as Retry-After lets it within the watch (5 s while the
    // door is held by the unit's holder).
    expect(polls.count).toBeGreaterThanOrEqual(PAGES * 1.5);
    // Every page waited the whole watch (its wait ended by the test).
    expect(outcomes.filter((o) => o.status !== 0).map((o) => ({ status: o.status, state: o.body?.state }))).toEqual([]);
    // No poll cost a call of its own (no place read: zrank, zscore); only the door's refresh, once per
    // DOOR_FRONTIER_MAX_AGE_MS whoever asks.
    const calls = commandsBetween(before, after);
    expect(calls.zrank ?? 0).toBe(0);
    expect(calls.zscore ?? 0).toBe(0);
    expect(calls.evalsha ?? 0).toBeLessThanOrEqual(Math.floor(elapsedMs / 5000) + 2);

    // Every page's next request came no sooner than the answer before it allowed.
    const byPage = new Map<number, typeof requests>();
    for (const request of requests.filter((r) => r.watched)) byPage.set(request.page, [...(byPage.get(request.page) ?? []), request]);
    let checked = 0;
    for (const asked of byPage.values()) {
      for (let i = 1; i < asked.length; i++) {
        // Measured between the two answers' arrivals: a request leaves after the sleep, so its answer
        // arrives later still. Less 1 ms: Node's timers run on libuv's loop clock, whole milliseconds
        // read at the loop's turn, so a 5000 ms sleep was seen to end 4999.91 ms after on performance.now.
        expect(asked[i]!.at - asked[i - 1]!.at).toBeGreaterThanOrEqual(asked[i - 1]!.retryAfter! * 1000 - 1);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(PAGES / 2);
    console.log(`${PAGES} pages, ${polls.count} polls in ${Math.round(elapsedMs)} ms: Redis calls ${JSON.stringify(calls)}`);
  });
});
