import { afterEach, describe, expect, it } from 'vitest';
import {
  createHttpClient,
  faultLedgerOf,
  mergeBursts,
  purchaseBurst,
  signBuyerTokens,
  spawnReconciler,
  type AppProcess,
  type BurstOutcome,
} from '@flashsale/harness';
import { createSaleStore } from '@flashsale/redis-store';
import { startReplicatedRedis, type ReplicatedRedis } from '../support/replicated-redis.ts';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// A failover the counts cannot see: the replica misses reservations the old master took after
// the reconciler's last checkpoint, which the workers wrote to MySQL, and once promoted it sells as many
// again before the reconciler looks. Its buyers, units and the checkpoint's stream entry then all stand
// where the checkpoint expects, and its `remaining` is too high by what it missed: left alone it would
// sell those units a second time (their 202s dead-lettered OVER_STOCK, lost) and let the missed buyers
// buy again. The checkpoint records the replication id (master_replid) of the server that held the sale;
// the promoted replica has another, so the watch has the sale rebuilt from MySQL. The audit, which would
// also see the drift once nothing is in flight, runs once an hour here: the watch alone is judged.
// Real redis-servers (a master and its replica), the system reaching Redis through one address that the
// failover moves.

const STOCK = 100;
const [BEFORE, MISSED, AFTER] = [30, 20, 20];

let system: System | undefined;
let pair: ReplicatedRedis | undefined;
let reconciler: AppProcess | undefined;
afterEach(async () => {
  await reconciler?.kill('SIGKILL');
  reconciler = undefined;
  await system?.stop();
  system = undefined;
  await pair?.stop();
  pair = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

describe('a Redis master failed over to a replica whose counts caught up with the checkpoint', () => {
  it('the watch sees another replication id than the checkpoint recorded and rebuilds the sale from MySQL: no unit sold twice, the missed buyers told their reservation', async () => {
    pair = await startReplicatedRedis();
    const { redis, onReplica } = pair;
    system = await startSystem({ workers: 1, env: { REDIS_URL: pair.url, AUDIT_EVERY_MS: '3600000' } });
    const { ctx, gateways } = system;
    // The pair's own clients, each bound to the system's prefix: the master's and the replica's view.
    const onMaster = createSaleStore(redis, ctx.config.REDIS_PREFIX);
    const replicaStore = createSaleStore(onReplica, ctx.config.REDIS_PREFIX);
    const saleId = await system.createSale({ stock: STOCK });
    const { buyers: buyersKey } = onMaster.sale(saleId).keys;
    const sale = () => ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } });

    const before = await purchaseBurst(gateways[0]!.url, saleId, buyers('before', BEFORE));
    await onMaster.sale(saleId).waitForDrain();
    const checkpoint = await until(sale, (s) => s.checkpointReservations === BEFORE && s.checkpointReplicationId !== null);
    expect(checkpoint.checkpointReplicationId).toBe(/master_replid:(\w+)/.exec(await redis.info('replication'))?.[1]);
    // No look from here until the failover is over: the checkpoint stays the one of BEFORE.
    await system.reconciler!.kill('SIGKILL');

    // The replica holds everything so far, the BEFORE reservations with it (waited for: a replica answers
    // long before its first sync is done, see caughtUp); then it stops receiving (and starts a history of
    // its own) and the master takes more, written to MySQL.
    await pair.caughtUp();
    await onReplica.replicaof('NO', 'ONE');
    expect({
      buyers: await onReplica.hlen(buyersKey),
      remaining: (await replicaStore.sale(saleId).state())?.remaining,
    }).toEqual({ buyers: BEFORE, remaining: STOCK - BEFORE });
    const missed = await purchaseBurst(gateways[0]!.url, saleId, buyers('missed', MISSED));
    await onMaster.sale(saleId).waitForDrain();
    await until(
      () => ctx.prisma.order.count({ where: { saleId } }),
      (n) => n === BEFORE + MISSED,
    );

    // The failover, then as many new buyers on the promoted replica: its counts pass the checkpoint's.
    await pair.failover();
    // The first buyer asks until the gateway has found the promoted replica (a try may have run before
    // its answer was lost: then 409 with that reservation); the others follow.
    const [probe, ...others] = buyers('after', AFTER);
    const probes: BurstOutcome[] = [];
    await until(
      async () => {
        const tried = await purchaseBurst(gateways[0]!.url, saleId, [probe!]);
        probes.push(tried);
        return tried;
      },
      (tried) => tried.accepted.size === 1 || tried.refused.ALREADY_PURCHASED === 1,
    );
    const after = mergeBursts(...probes, await purchaseBurst(gateways[0]!.url, saleId, others));
    expect(after.accepted.size).toBeGreaterThanOrEqual(AFTER - 1);
    await onMaster.sale(saleId).waitForDrain();
    expect({
      buyers: await onReplica.hlen(buyersKey),
      remaining: (await replicaStore.sale(saleId).state())?.remaining,
    }).toEqual({
      buyers: BEFORE + AFTER,
      remaining: STOCK - BEFORE - AFTER,
    });

    // A reconciler looks again: another history than the checkpoint's, so the sale is rebuilt from MySQL.
    reconciler = await spawnReconciler(system.env);
    await until(
      () => onReplica.hlen(buyersKey),
      (n) => n === BEFORE + MISSED + AFTER,
      60_000,
    );
    await until(
      () => replicaStore.sale(saleId).state(),
      (state) => state?.paused === false && state.remaining === STOCK - BEFORE - MISSED - AFTER,
      60_000,
    );

    // The missed buyers asking again are told the reservation the old master gave them.
    const tokens = signBuyerTokens(buyers('missed', MISSED));
    const client = createHttpClient(gateways[0]!.url, 4);
    const told = [];
    for (const [i, userId] of buyers('missed', MISSED).entries()) {
      const res = await client.send('POST', `/api/sales/${saleId}/purchase`, {
        headers: { authorization: `Bearer ${tokens[i]!}` },
        body: { quantity: 1 },
      });
      told.push([res.status, res.body.code, res.body.reservationId, userId]);
    }
    client.close();
    expect(told.sort()).toEqual([...missed.accepted].map(([id, { userId }]) => [409, 'ALREADY_PURCHASED', id, userId]).sort());

    // What is left sells once: every 202 an order, the stock exactly.
    const rest = await purchaseBurst(gateways[0]!.url, saleId, buyers('rest', 60));
    expect(rest.accepted.size).toBe(STOCK - BEFORE - MISSED - AFTER);
    await onMaster.sale(saleId).waitForDrain();
    const all = mergeBursts(before, missed, after, rest);
    const ledger = await faultLedgerOf(onMaster, ctx.prisma, saleId, all.accepted, new Set([probe!]));
    expect({
      lost: ledger.lost,
      duplicated: ledger.duplicated,
      unexpected: ledger.unexpected,
      oversold: ledger.oversold,
      unitsInDb: ledger.unitsInDb,
      remaining: ledger.remaining,
    }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
      unitsInDb: STOCK,
      remaining: 0,
    });
    expect(await sale()).toMatchObject({ lostReservations: 0 });
  });
});
