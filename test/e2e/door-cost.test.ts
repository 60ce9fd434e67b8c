import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServer } from '@flashsale/harness';
import { createTestContext, redisNow, type TestContext } from '../support/context.ts';
import { commandCounts, commandsBetween } from '../support/command-stats.ts';
import { startGateway, type TestGateway } from '../support/gateway.ts';
import { createQueuedSale, doorBuyer } from '../support/door.ts';
import { until } from '../support/until.ts';

// What waiting at the door costs Redis, counted by a redis-server of the test's own (nothing else talks
// to it but this gateway): a join is one script call; a waiting buyer's status poll with their ticket is
// none, however many buyers ask, while the gateway's copy of the door is fresh (DOOR_FRONTIER_MAX_AGE_MS,
// set long here so the count is exact); refreshing that copy is one call for everyone.

let server: RedisServer;
let ctx: TestContext;
let gateway: TestGateway;

beforeAll(async () => {
  server = await startRedisServer();
  ctx = createTestContext({ REDIS_URL: server.url, DOOR_FRONTIER_MAX_AGE_MS: '5000' });
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

describe('what the door costs Redis', () => {
  it("a join is one script call; 200 waiting buyers polling with their tickets cost no call of their own: only the door's refresh, once per DOOR_FRONTIER_MAX_AGE_MS", async () => {
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, { stock: 1, admitPerSecond: 0.01, startsIn: 1000 });
    const buyers = Array.from({ length: 200 }, (_, i) => doorBuyer(gateway.url, id, `cost-${i}`));

    // The first join also reads the door the answers are judged against (then cached).
    expect((await buyers[0]!.join()).status).toBe(200);
    const beforeJoin = await commandCounts(server.url);
    expect((await buyers[1]!.join()).status).toBe(200);
    const joinCalls = commandsBetween(beforeJoin, await commandCounts(server.url));
    // One script call (the commands it ran inside are counted too, none of them a call of the gateway's).
    expect((joinCalls.evalsha ?? 0) + (joinCalls.eval ?? 0)).toBe(1);
    for (const b of buyers.slice(2)) await b.join();
    await until(
      () => redisNow(ctx.redis),
      (now) => now >= startsAt,
    );
    // Each buyer's first poll after the draw reads their rank once (the ticket then carries it).
    for (const b of buyers) await b.status();

    const before = await commandCounts(server.url);
    const started = performance.now();
    for (let round = 0; round < 3; round += 1) {
      for (const b of buyers.slice(1)) {
        const asked = await b.status();
        expect(asked.body.state).toBe('waiting');
      }
    }
    const after = await commandCounts(server.url);
    const elapsedMs = performance.now() - started;

    // 597 polls: no call of their own (no place read: zrank, zscore); only the door's refresh, once per
    // DOOR_FRONTIER_MAX_AGE_MS (5 s here) whoever asks.
    const calls = commandsBetween(before, after);
    expect(calls.zrank ?? 0).toBe(0);
    expect(calls.zscore ?? 0).toBe(0);
    expect(calls.evalsha ?? 0).toBeLessThanOrEqual(Math.floor(elapsedMs / 5000) + 1);
    // About a thousand requests one after another: generous for a loaded machine.
  });

  it('a status poll without a ticket costs no Redis call: 300 of them, from joined and unknown buyers, are answered from the copy of the door', async () => {
    const { id } = await createQueuedSale(ctx, gateway.url, { stock: 1, admitPerSecond: 0.01, startsIn: 60_000 });
    const joined = doorBuyer(gateway.url, id, 'ticketless-joined');
    expect((await joined.join()).status).toBe(200);
    const strangers = Array.from({ length: 299 }, (_, i) => doorBuyer(gateway.url, id, `ticketless-${i}`));

    const before = await commandCounts(server.url);
    const started = performance.now();
    const asked = await joined.status(null);
    for (const b of strangers) expect((await b.status(null)).body).toMatchObject({ state: 'not_joined', ticket: null });
    const elapsedMs = performance.now() - started;
    const calls = commandsBetween(before, await commandCounts(server.url));

    // Nothing proves the joined buyer's place without their ticket: told to join again (the same place).
    expect(asked.body).toMatchObject({ state: 'not_joined', ticket: null });
    // Only the door's refresh, once per DOOR_FRONTIER_MAX_AGE_MS (5 s here), whoever asks; no place read.
    expect(calls.zrank ?? 0).toBe(0);
    expect(calls.zscore ?? 0).toBe(0);
    expect((calls.evalsha ?? 0) + (calls.eval ?? 0)).toBeLessThanOrEqual(Math.floor(elapsedMs / 5000) + 1);
    // The join again gives the place and its ticket back.
    expect((await joined.join()).body).toMatchObject({ state: 'waiting', ticket: expect.any(String) });
  });
});
