import { doorGuardsOff } from '@flashsale/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, redisNow, type TestContext } from '../../../test/support/context.ts';
import { manualClock } from '../../../test/support/clock.ts';
import { createSaleStore } from '@flashsale/redis-store';
import { DoorFrontiers } from './door-frontier.ts';

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

describe('DoorFrontiers', () => {
  it('reads each door at most once per max age, one call in flight however many ask, and moves now on by its own clock', async () => {
    const now = await redisNow(ctx.redis);
    const sale = { id: 880_000_001, name: 'Door', stock: 5, perUserLimit: 1, startsAt: now + 60_000, endsAt: now + 3_600_000 };
    await ctx.store.publish(
      {
        ...sale,
        admission: {
          mode: 'queue',
          preQueueSeconds: 600,
          admitPerSecond: 5,
          admissionTtlSeconds: 60,
          noShowFactor: 1,
          paused: false,
          ...doorGuardsOff(60),
        },
      },
      'g',
    );
    const clock = manualClock();
    // The real client, with its admit calls counted.
    let calls = 0;
    const counted = Object.create(ctx.redis) as typeof ctx.redis;
    counted.admitQueue = (...args: Parameters<typeof ctx.redis.admitQueue>) => {
      calls += 1;
      return ctx.redis.admitQueue(...args);
    };
    const frontiers = new DoorFrontiers(createSaleStore(counted, ctx.config.REDIS_PREFIX), 250, clock.now);

    const first = await Promise.all(Array.from({ length: 20 }, () => frontiers.read(sale.id)));
    expect(calls).toBe(1);
    expect(first[0]!.reading).toMatchObject({ kind: 'door', door: { saleId: sale.id, queued: 0, front: 0 } });
    clock.advance(200);
    const cached = await frontiers.read(sale.id);
    expect(calls).toBe(1);
    expect(cached.now).toBe(first[0]!.now + 200);
    clock.advance(100);
    await frontiers.read(sale.id);
    expect(calls).toBe(2);
  });

  it('keeps no entry for a sale that does not exist', async () => {
    const frontiers = new DoorFrontiers(ctx.store);
    expect((await frontiers.read(880_000_999)).reading).toEqual({ kind: 'sale_not_found' });
  });
});
