import { afterEach, describe, expect, it } from 'vitest';
import { skewedClockEnv, spawnReconciler, type AppProcess } from '@flashsale/harness';
import { redisNow, saleKeys } from '@flashsale/redis-store';
import { startSystem, type System } from '../support/system.ts';
import { createQueuedSale, doorBuyer } from '../support/door.ts';
import { doorPurchases, expectAdmittedInOrder, queueUp, turnsOf } from '../support/door-faults.ts';
import { until } from '../support/until.ts';

// The door (a queued sale's waiting room) while its processes die, Redis loses everything, or a
// gateway's clock is wrong. After each: nobody admitted twice, turns given in queue order (rank i never
// admitted after rank j > i), the ledger exact. docs/architecture.md ("The door", faults) states it.

let system: System | undefined;
const extra: AppProcess[] = [];
afterEach(async () => {
  await Promise.all(extra.splice(0).map((p) => p.kill('SIGKILL')));
  await system?.stop();
  system = undefined;
});

describe('the door through faults', () => {
  it('Redis loses everything mid-queue: the sale is rebuilt with a new door that admits nobody until its crowd is back; tickets restore every place, buyers who bought keep their used turn, and admission resumes at the rate, in the old order', async () => {
    system = await startSystem({});
    const { buy, expectLedgerExact } = doorPurchases(system);
    const { ctx } = system;
    const prefix = ctx.config.REDIS_PREFIX;
    const { id, startsAt } = await createQueuedSale(ctx, system.gateways[0]!.url, {
      stock: 6,
      admitPerSecond: 1,
      admissionTtlSeconds: 600,
      startsIn: 2500,
    });
    const order = await queueUp(system, id, startsAt, 12, 'flush');

    // Three turns given; the first two buy; the third holds an unused turn when Redis loses it.
    for (const b of order.slice(0, 3)) await b.waitFor('admitted');
    await buy(order[0]!);
    await buy(order[1]!);
    await ctx.store.sale(id).waitForDrain();
    expectAdmittedInOrder(await turnsOf(system, id), order);

    await ctx.redis.flushall();
    const keys = saleKeys(prefix, id);
    await until(
      () => ctx.redis.hgetall(keys.meta),
      (m) => m.paused === '0',
      60_000,
    );
    const restoringUntil = Number(await ctx.redis.hget(keys.door, 'restoring_until'));
    expect(restoringUntil).toBeGreaterThan(await redisNow(ctx.redis));

    // Everyone comes back with their ticket, last in line first: the order is the ticket's, not the asking's.
    // A buyer is put back at their first ask answered from the new door: a gateway answers from its copy
    // of the door for DOOR_FRONTIER_MAX_AGE_MS, and under CPU hogs a copy read before the loss was seen
    // to answer a few asks more (as before the loss: waiting, same place); the buyer asks again, as a
    // client honouring Retry-After does, until the answer is the new door's (its epoch in the ticket).
    const epoch = await ctx.redis.hget(keys.door, 'epoch');
    for (const b of [...order].reverse()) {
      const back = await until(
        () => b.status(),
        (answer) => answer.status !== 200 || answer.body.ticket?.split('.')[5] === epoch,
        30_000,
      );
      expect(back.status).toBe(200);
      expect(back.body.state, `${b.userId}: ${JSON.stringify(back.body)}`).toBe(order.indexOf(b) < 2 ? 'used' : 'waiting');
    }
    expect(await ctx.redis.zrange(keys.queue, 0, -1)).toEqual(order.map((b) => b.userId));
    // The two who bought have their turns used (never a second one); nobody is admitted while restoring.
    const restored = await turnsOf(system, id);
    expect([...restored.keys()].sort()).toEqual([order[0]!.userId, order[1]!.userId].sort());
    for (const t of restored.values()) expect(t).toBeLessThan(0);
    expect((await order[0]!.purchase()).body.code).toBe('ALREADY_PURCHASED');
    expect((await order[2]!.purchase()).body.code).toBe('NOT_ADMITTED');

    // After the grace, one a second again (the credit bank holds at most one second's worth: no burst).
    await order[2]!.waitFor('admitted', 60_000);
    // The frontier first, then the clock: a turn given between the two reads only loosens the bound.
    const front = Number(await ctx.redis.hget(keys.door, 'front'));
    const now = await redisNow(ctx.redis);
    expect(now).toBeGreaterThanOrEqual(restoringUntil);
    // front counts the two used turns the door passed over; the rest at 1/s from restoringUntil, plus the
    // one second banked and one for the last frontier refresh before it.
    expect(front).toBeLessThanOrEqual(2 + 2 + Math.floor((now - restoringUntil) / 1000));
    for (const b of order.slice(2, 6)) {
      await b.waitFor('admitted', 60_000);
      await buy(b);
    }
    // The two who bought before the loss hold the used turns the restore gave them (dated then); every
    // turn given since went in the old order, from the third in line on.
    const after = await turnsOf(system, id);
    expect(after.get(order[0]!.userId)).toBeLessThan(0);
    expect(after.get(order[1]!.userId)).toBeLessThan(0);
    expectAdmittedInOrder(after, order.slice(2));
    expect((await order[6]!.status()).body.state).not.toBe('admitted');
    await expectLedgerExact(id, 6);
  });

  it('a gateway, the worker and the reconciler killed mid-queue: the buyers keep their places on another gateway with their tickets, turns go in queue order, the ledger exact', async () => {
    system = await startSystem({ gateways: 2 });
    const { buy, expectLedgerExact } = doorPurchases(system);
    const { ctx } = system;
    const { id, startsAt } = await createQueuedSale(ctx, system.gateways[0]!.url, {
      stock: 6,
      admitPerSecond: 2,
      admissionTtlSeconds: 600,
      startsIn: 2500,
    });
    const order = await queueUp(system, id, startsAt, 10, 'kill');

    await order[0]!.waitFor('admitted');
    await buy(order[0]!);
    // The gateway the buyers joined through dies; they go on through the other with the same tickets.
    await system.gateways[0]!.kill('SIGKILL');
    const other = system.gateways[1]!.url;
    const moved = order.map((b) => {
      const again = doorBuyer(other, id, b.userId);
      return { again, ticket: b.ticket };
    });
    for (const [i, m] of moved.entries()) {
      const asked = await m.again.status(m.ticket);
      expect(asked.status).toBe(200);
      if (i > 0 && asked.body.state === 'waiting') expect(asked.body.position).not.toBeNull();
    }
    const buyers = moved.map((m) => m.again);

    // The worker dies with the next purchases in its hands; a new one writes them.
    await buyers[1]!.waitFor('admitted');
    await system.workers[0]!.kill('SIGKILL');
    await buy(buyers[1]!);
    await buyers[2]!.waitFor('admitted');
    await buy(buyers[2]!);
    await system.addWorker();
    // The reconciler dies: the door needs it for nothing but a rebuild; a new one takes over.
    await system.reconciler!.kill('SIGKILL');
    for (const b of buyers.slice(3, 6)) {
      await b.waitFor('admitted');
      await buy(b);
    }
    extra.push(await spawnReconciler({ ...system.env }));

    expectAdmittedInOrder(await turnsOf(system, id), buyers);
    expect((await buyers[0]!.purchase()).body.code).toBe('ALREADY_PURCHASED');
    await expectLedgerExact(id, 6);
  });

  it("a gateway an hour ahead: the frontier is judged on Redis's clock (no place drawn, nobody admitted before the start, then the rate)", async () => {
    system = await startSystem({ gatewayEnv: skewedClockEnv(3600) });
    const { buy, expectLedgerExact } = doorPurchases(system);
    const { ctx } = system;
    const { id, startsAt } = await createQueuedSale(ctx, system.gateways[0]!.url, {
      stock: 5,
      admitPerSecond: 1,
      admissionTtlSeconds: 600,
      startsIn: 4000,
    });
    const buyers = Array.from({ length: 8 }, (_, i) => doorBuyer(system!.gateways[0]!.url, id, `skew-${i}`, 3 * 3600));
    for (const b of buyers) {
      const joined = await b.join();
      // Before the start on Redis's clock, whatever the gateway's says: no place yet.
      expect(joined.body).toMatchObject({ state: 'waiting', position: null });
    }
    expect((await buyers[0]!.purchase()).body.code).toBe('SALE_NOT_STARTED');
    expect(await ctx.redis.zcard(saleKeys(ctx.config.REDIS_PREFIX, id).turns)).toBe(0);

    await until(
      () => redisNow(ctx.redis),
      (now) => now >= startsAt,
    );
    const ranked = (await Promise.all(buyers.map(async (b) => ({ b, rank: await b.rank() }))))
      .sort((x, y) => x.rank - y.rank)
      .map((r) => r.b);
    await ranked[2]!.waitFor('admitted', 30_000);
    const now = await redisNow(ctx.redis);
    const turns = await turnsOf(system, id);
    // Every turn began at or after the start on Redis's clock, at most one a second (plus one banked).
    for (const until_ of turns.values()) expect(Math.abs(until_) - 600_000).toBeGreaterThanOrEqual(startsAt);
    expect(turns.size).toBeLessThanOrEqual(2 + Math.floor((now - startsAt) / 1000));
    expectAdmittedInOrder(turns, ranked);
    await buy(ranked[0]!);
    await expectLedgerExact(id, 1);
  });
});
