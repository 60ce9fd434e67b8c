import { afterEach, describe, expect, it } from 'vitest';
import { saleKeys } from '@flashsale/redis-store';
import { startClusterSystem, type ClusterSystem } from '../support/system.ts';
import { createQueuedSale } from '../support/door.ts';
import { doorPurchases, expectAdmittedInOrder, queueUp, turnsOf } from '../support/door-faults.ts';
import { convergedOnPrimary } from '../support/converged.ts';

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
  it("its master fails over mid-queue: places, turns and the frontier carry on in the replica; nobody admitted twice, turns in queue order, the ledger exact", async () => {
    system = await startClusterSystem({ gateways: 1, workers: 1, replicasPerMaster: 1 });
    const { ctx, cluster } = system;
    const { buy, expectLedgerExact } = doorPurchases(system);
    const { id, startsAt } = await createQueuedSale(ctx, system.gateways[0]!.url, { stock: 5, admitPerSecond: 2, admissionTtlSeconds: 600, startsIn: 2500 });
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
});
