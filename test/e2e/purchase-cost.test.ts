import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buyerToken, startRedisServer, type RedisServer } from '@flashsale/harness';
import { createLiveSale, createTestContext, type TestContext } from '../support/context.ts';
import { commandCounts, commandsBetween } from '../support/command-stats.ts';
import { startGateway, type TestGateway } from '../support/gateway.ts';
import { until } from '../support/until.ts';

// The purchase path's cost in Redis commands, counted by a redis-server of the test's own: nothing else
// talks to it but this gateway, so INFO commandstats sees exactly what the purchases cost.

let server: RedisServer;
let ctx: TestContext;
let gateway: TestGateway;

beforeAll(async () => {
  server = await startRedisServer();
  ctx = createTestContext({ REDIS_URL: server.url });
  gateway = await startGateway(ctx);
  // The gateway's one Redis reader on a timer (the dashboard history, which reads every sale live in
  // the shared MySQL, other files' sales too) would be counted with what is measured here.
  await gateway.gateway.history.stop();
});
afterAll(async () => {
  await gateway.close();
  await ctx.close();
  await server.stop();
});

describe('what a purchase costs in Redis', () => {
  it('is one EVALSHA per purchase, accepted or refused, and none once the gateway has seen the sale sell out', async () => {
    const sale = await createLiveSale(ctx, { stock: 4 });
    const send = async (buyer: string) =>
      fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, { method: 'POST', headers: { authorization: `Bearer ${buyerToken(buyer)}` } });
    // Warm up: the first call may have to load the script (NOSCRIPT, then EVAL).
    expect((await send('warm-up')).status).toBe(202);

    const before = await commandCounts(server.url);
    const statuses = [];
    for (const buyer of ['a', 'b', 'a', 'c']) statuses.push((await send(buyer)).status);
    // The last unit went: the gateway reads the sale's holders once, in the background, then keeps the verdict.
    await until(
      async () => gateway.gateway.verdicts.get(sale.id),
      (known) => known !== undefined,
      60_000,
    );
    for (const buyer of ['d', 'e', 'c']) statuses.push((await send(buyer)).status);
    const after = await commandCounts(server.url);

    // Accepted, accepted, duplicate, accepted (the last unit): one EVALSHA each. commandstats also counts
    // the commands the script runs inside: per call two HGETs (the sale's packed terms, the buyer check),
    // TIME for all but the duplicate (answered before the clock is read), and for each of the three
    // accepted one more HGET (remaining), HINCRBY, HSET and XADD; no read of the buyer's closed orders (the
    // rebuy rule's, made only once an order of the sale has closed). Then one HSCAN of the sale's holders,
    // and from there every refusal, sold out or a holder's retry (409 with their reservation), is answered
    // by the gateway: no Redis call at all.
    // Besides, an accepted purchase may PUBLISH the workers' work signal: at most once per sale per 50 ms
    // (WorkSignaller), so at most once per accepted purchase here, and never for a refusal.
    expect(statuses).toEqual([202, 202, 409, 202, 410, 410, 409]);
    const { publish = 0, ...commands } = commandsBetween(before, after);
    expect(commands).toEqual({ evalsha: 4, time: 3, hget: 4 * 2 + 3, hincrby: 3, hset: 3, xadd: 3, hscan: 1 });
    expect(publish).toBeLessThanOrEqual(3);
  });
});
