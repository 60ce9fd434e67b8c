import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, faultLedgerOf, purchaseBurst, signBuyerTokens } from '@flashsale/harness';
import { createSaleStore } from '@flashsale/redis-store';
import { startReplicatedRedis, type ReplicatedRedis } from '../support/replicated-redis.ts';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// A Redis master fails over to a replica that missed its last writes: the old master had
// taken reservations whose orders the workers wrote to MySQL, and the promoted replica has never heard of
// them. A buyer who was answered 503 (or never got the answer) retries: once the rebuild the watch calls
// for has run, they learn what happened (409 ALREADY_PURCHASED with their own reservation id), never a
// second 202 that the workers would dead-letter. Real redis-servers (a master and its replica), the
// system reaching Redis through one address that the failover moves, as a Sentinel-aware proxy would.

const STOCK = 100;
const BEFORE = 40;
const MISSED = 30;

let system: System | undefined;
let pair: ReplicatedRedis | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
  await pair?.stop();
  pair = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

describe('a Redis master failed over to a replica that missed its last reservations', () => {
  it("answers a buyer's retry 409 ALREADY_PURCHASED with the reservation the old master gave, once the rebuild ran; every 202 is one order", async () => {
    pair = await startReplicatedRedis();
    const { redis, onReplica } = pair;
    system = await startSystem({ workers: 1, env: { REDIS_URL: pair.url } });
    const { ctx, gateways } = system;
    // The pair's own clients, each bound to the system's prefix: the master's and the replica's view.
    const onMaster = createSaleStore(redis, ctx.config.REDIS_PREFIX);
    const replicaStore = createSaleStore(onReplica, ctx.config.REDIS_PREFIX);
    const saleId = await system.createSale({ stock: STOCK });
    const { buyers: buyersKey } = onMaster.sale(saleId).keys;

    const before = await purchaseBurst(gateways[0]!.url, saleId, buyers('before', BEFORE));
    await onMaster.sale(saleId).waitForDrain();
    await until(
      () => onReplica.hlen(buyersKey),
      (n) => n === BEFORE,
    );
    // The replica stops receiving: what the master takes from here on, it never sees.
    await onReplica.replicaof('NO', 'ONE');
    const missed = await purchaseBurst(gateways[0]!.url, saleId, buyers('missed', MISSED));
    await onMaster.sale(saleId).waitForDrain();
    await until(
      () => ctx.prisma.order.count({ where: { saleId } }),
      (n) => n === BEFORE + MISSED,
    );
    // The watch's checkpoint in MySQL saw them: the evidence that survives the failover.
    await until(
      () => ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } }),
      (s) => (s.checkpointReservations ?? 0) >= BEFORE + MISSED,
    );
    expect([before.accepted.size, missed.accepted.size, await onReplica.hlen(buyersKey)]).toEqual([BEFORE, MISSED, BEFORE]);

    // The failover: the address moves to the replica, the old master dies.
    await pair.failover();

    // The watch finds fewer buyers than its checkpoint and rebuilds the sale from MySQL.
    await until(
      () => onReplica.hlen(buyersKey),
      (n) => n === BEFORE + MISSED,
      120_000,
    );
    await until(
      () => replicaStore.sale(saleId).state(),
      (state) => state?.paused === false,
      120_000,
    );

    const tokens = signBuyerTokens(buyers('missed', MISSED));
    const client = createHttpClient(gateways[0]!.url, 4);
    const told = new Map<string, string>();
    for (const [i, userId] of buyers('missed', MISSED).entries()) {
      const res = await client.send('POST', `/api/sales/${saleId}/purchase`, {
        headers: { authorization: `Bearer ${tokens[i]!}` },
        body: { quantity: 1 },
      });
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 409, code: 'ALREADY_PURCHASED' });
      told.set(res.body.reservationId as string, userId);
    }
    client.close();
    expect([...told].sort()).toEqual([...missed.accepted].map(([id, { userId }]) => [id, userId]).sort());

    const accepted = new Map([...before.accepted, ...missed.accepted]);
    const ledger = await faultLedgerOf(onMaster, ctx.prisma, saleId, accepted, new Set());
    expect({
      lost: ledger.lost,
      duplicated: ledger.duplicated,
      unexpected: ledger.unexpected,
      oversold: ledger.oversold,
      remaining: ledger.remaining,
    }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
      remaining: STOCK - BEFORE - MISSED,
    });
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } })).toMatchObject({ lostReservations: 0 });
  });
});
