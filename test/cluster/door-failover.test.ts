import { afterEach, describe, expect, it } from 'vitest';
import { askRedis, type ClusterNode } from '@flashsale/harness';
import { redisNow, saleKeys } from '@flashsale/redis-store';
import { startClusterSystem, type ClusterSystem } from '../support/system.ts';
import { createQueuedSale, doorBuyer } from '../support/door.ts';
import { doorPurchases, expectAdmittedInOrder, queueUp, turnsOf } from '../support/door-faults.ts';
import { convergedOnPrimary } from '../support/converged.ts';
import { until } from '../support/until.ts';

// A queued sale's door on a real Redis Cluster (3 masters, a replica each), its master failed over
// mid-queue to its replica (in sync: CLUSTER FAILOVER FORCE). The door's keys share the sale's hash tag,
// so every script touches one slot, and they move with it: the queue, the turns and the frontier go on
// where they were. A failover to a replica behind loses what it missed, as a flush does (see
// test/faults/door-faults.test.ts and docs/architecture.md, "Redis loses the door").

let system: ClusterSystem | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

describe('the door on a Redis Cluster', () => {
  it('its master fails over mid-queue: places, turns and the frontier carry on in the replica; nobody admitted twice, turns in queue order, the ledger exact', async () => {
    system = await startClusterSystem({ gateways: 1, workers: 1, replicasPerMaster: 1 });
    const { ctx, cluster } = system;
    const { buy, expectLedgerExact } = doorPurchases(system);
    const { id, startsAt } = await createQueuedSale(ctx, system.gateways[0]!.url, {
      stock: 5,
      admitPerSecond: 2,
      admissionTtlSeconds: 600,
      startsIn: 2500,
    });
    const order = await queueUp(system, id, startsAt, 10, 'failover');

    for (const b of order.slice(0, 2)) {
      await b.waitFor('admitted');
      await buy(b);
    }
    const keys = saleKeys(ctx.config.REDIS_PREFIX, id);
    const before = await turnsOf(system, id);
    const frontBefore = Number(await ctx.redis.hget(keys.door, 'front'));

    const master = await cluster.masterOf(keys.door);
    const [replica] = await cluster.replicasOf(master);
    await cluster.failover(replica!);
    expect((await cluster.masterOf(keys.door)).port).toBe(replica!.port);

    // The same door: no new epoch (no loss), every turn given before still there, the frontier not back.
    expect(await ctx.redis.hget(keys.door, 'restoring_until')).toBeNull();
    const after = await turnsOf(system, id);
    for (const [user, turn] of before) expect(after.get(user), user).toBe(turn);
    expect(Number(await ctx.redis.hget(keys.door, 'front'))).toBeGreaterThanOrEqual(frontBefore);
    // The reconciler rebuilds the sale in the promoted replica's history of writes (another replication
    // id), pausing it a moment: purchases then are 503 SALE_PAUSED, retried by a buyer. Once it resumed:
    await convergedOnPrimary(system, id);
    // The buyers who bought are not admitted again; the rest go on in their order.
    expect((await order[0]!.purchase()).body.code).toBe('ALREADY_PURCHASED');
    for (const b of order.slice(2, 5)) {
      await b.waitFor('admitted', 60_000);
      await buy(b);
    }

    expectAdmittedInOrder(await turnsOf(system, id), order);
    await expectLedgerExact(id, 5);
  });

  it('a replica behind promoted mid-queue (its master frozen past the failover): turns it never got are never `expired`, though the gateway holds a copy of the lost door; everyone waiting is told `waiting` until the door gives their turn again, and every buyer buys', async () => {
    // The gateway's copy of the door lives 10 s, so it still holds the lost frontier when buyers whose
    // turns were lost ask (as the issue saw: a copy the old master answered after it was thawed).
    system = await startClusterSystem({ gateways: 1, workers: 1, replicasPerMaster: 1, gatewayEnv: { DOOR_FRONTIER_MAX_AGE_MS: '10000' } });
    const { ctx, cluster } = system;
    const { accepted, expectLedgerExact } = doorPurchases(system);
    const buyers = 12;
    const { id, startsAt } = await createQueuedSale(ctx, system.gateways[0]!.url, {
      stock: buyers,
      admitPerSecond: 10,
      admissionTtlSeconds: 600,
      startsIn: 4000,
    });
    const crowd = Array.from({ length: buyers }, (_, i) => doorBuyer(system!.gateways[0]!.url, id, `behind-${i}`));
    for (const b of crowd) expect((await b.join()).status).toBe(200);

    // The replica stops taking its master's writes (frozen, its link cut by the master, so nothing
    // after this is ever sent to it): the draw and the first turns happen on the master alone, and
    // their buyers are told `admitted`. Then the master freezes, the replica, behind, is promoted, and
    // the master comes back as its replica.
    const keys = saleKeys(ctx.config.REDIS_PREFIX, id);
    const master = await cluster.masterOf(keys.door);
    const [replica] = await cluster.replicasOf(master);
    replica!.freeze();
    try {
      await askRedis(master.url, (r) => r.client('KILL', 'TYPE', 'replica'));
      await until(
        () => redisNow(ctx.redis),
        (now) => now >= startsAt,
      );
      // Asked until the gateway's copy, read after the start, has turns to tell.
      await until(
        () => Promise.all(crowd.map((b) => b.status())),
        (told) => told.some((t) => t.body.state === 'admitted'),
        30_000,
      );
      master.freeze();
    } finally {
      replica!.thaw();
    }
    try {
      await until(
        () => roleOf(replica!),
        (role) => role === 'master',
        60_000,
      );
    } finally {
      master.thaw();
    }
    await until(
      () => roleOf(master),
      (role) => role === 'slave',
      60_000,
    );
    // The promoted replica never had a turn: its frontier is where the start left it.
    expect(Number((await askRedis(replica!.url, (r) => r.hget(keys.door, 'front'))) ?? 0)).toBe(0);

    // Every buyer asks as a client honouring Retry-After does, and buys once admitted. Nobody is ever
    // told a final state the door does not hold.
    const told = new Map<string, string[]>();
    await Promise.all(
      crowd.map(async (b) => {
        const states: string[] = [];
        told.set(b.userId, states);
        const deadline = Date.now() + 120_000;
        for (;;) {
          if (Date.now() > deadline) throw new Error(`${b.userId} never bought: told ${states.join(', ')}`);
          const asked = await b.status();
          states.push(asked.status === 200 ? asked.body.state : `${asked.status}`);
          if (asked.status === 200 && asked.body.state === 'admitted') {
            const res = await b.purchase();
            if (res.status === 202) return accepted(b, res);
          }
          await new Promise((resolve) => setTimeout(resolve, Math.min(1000, Number(asked.retryAfter ?? 1) * 1000)));
        }
      }),
    );
    const lied = [...told].filter(([, states]) => states.some((state) => !['waiting', 'admitted', '503'].includes(state)));
    expect(lied).toEqual([]);
    await convergedOnPrimary(system, id);
    await expectLedgerExact(id, buyers);
  });
});

async function roleOf(node: ClusterNode): Promise<string> {
  try {
    return String(((await askRedis(node.url, (r) => r.role())) as string[])[0]);
  } catch {
    return 'unreachable';
  }
}
