import { afterEach, describe, expect, it } from 'vitest';
import type { RedisServer } from '@flashsale/harness';
import { startSentinelSystem, type SentinelSystem } from '../support/system.ts';
import { burst, buyUntilAnswered, expectLedger, sellOn } from '../support/sentinel-sales.ts';

// Redis Sentinel, the common high availability of a single primary: a primary, two replicas and three
// real redis-sentinel processes (AOF always everywhere), and real processes told only REDIS_SENTINELS.
// The primary is killed, or frozen past the failover and let go, in the middle of a burst; every test ends
// with the ledger of the sale. With REDIS_WAIT_REPLICAS=2 (every replica) a 202 is answered only once
// both replicas hold the reservation, and the failover loses none; without it, a frozen primary let go may
// run reservations alone (split brain) that its demotion then discards. The WAIT timeout is long here: a
// replica of a busy machine may take a while to acknowledge, and a timeout would answer 503, which is not
// the subject. Every replica, not one: with one, the sentinels may promote the replica that had not
// acknowledged (they judge by the offsets they last saw); CI runs lost 2 such 202s of a freeze, and 1 of
// a kill (docs/operations.md, "Waiting for a replica before answering 202").
const WAIT_FOR_EVERY_REPLICA = { REDIS_WAIT_REPLICAS: '2', REDIS_WAIT_TIMEOUT_MS: '5000' };

let system: SentinelSystem | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const STOCK = 300;
describe('Redis Sentinel under faults', () => {
  it('the primary SIGKILLed mid-burst, with REDIS_WAIT_REPLICAS=2 (every replica): a replica takes over, every process follows the sentinels, the old primary comes back as its replica, no 202 is lost', async () => {
    system = await startSentinelSystem({ gateways: 2, workers: 2, env: WAIT_FOR_EVERY_REPLICA });
    const s = system;
    const saleId = await s.createSale({ stock: STOCK });
    const old = await s.sentinels.primary();

    // The promoted replica has one replica left, and every purchase waits for two: the killed server is
    // started again once the failover is done, as a deployment replaces a lost replica, and the sentinels
    // make it a replica of the new primary.
    let promoted: Promise<RedisServer> | undefined;
    const during = await burst(s, saleId, 'during', 200, [
      60,
      async () => {
        await old.kill('SIGKILL');
        promoted = s.sentinels.waitForFailover(old);
        await promoted;
        await old.start();
      },
    ]);
    expect((await promoted!).port).not.toBe(old.port);
    // Selling goes on through the new primary without anyone telling the processes where it is.
    const probes = await buyUntilAnswered(s, saleId);
    // Selling goes on (a 202 at last); every answer of it, 503s included, is judged by the ledger.
    const rest = await sellOn(s, saleId, 'rest', 200);

    const { ledger, all, counted } = await expectLedger(s, saleId, [during, ...probes, ...rest], STOCK);
    expect({ lost: ledger.lost, counted }).toEqual({ lost: [], counted: 0 });
    console.info(
      `sentinel kill: ${all.accepted.size} accepted, ${during.failed.size} answered 5xx and ${during.unknown.size} unanswered during the failover; ` +
        `${ledger.lost.length} lost (counted), ${ledger.unitsInDb} units in orders, ${ledger.remaining} remaining`,
    );
  });

  /** Freezes the primary at the 60th answer of a burst, lets it go once a replica took over, sells on. */
  async function freezeMidBurst(env: NodeJS.ProcessEnv) {
    system = await startSentinelSystem({ gateways: 2, workers: 2, env });
    const s = system;
    const saleId = await s.createSale({ stock: STOCK });
    const old = await s.sentinels.primary();
    let promoted: Promise<unknown> | undefined;
    const during = await burst(s, saleId, 'during', 200, [
      60,
      async () => {
        old.freeze();
        // Let go once a replica has taken over: the sentinels then make the old primary its replica.
        promoted = s.sentinels.waitForFailover(old).finally(() => old.thaw());
        await promoted;
      },
    ]);
    await promoted;
    const probes = await buyUntilAnswered(s, saleId);
    // Selling goes on (a 202 at last); every answer of it, 503s included, is judged by the ledger.
    const rest = await sellOn(s, saleId, 'rest', 200);
    const result = await expectLedger(s, saleId, [during, ...probes, ...rest], STOCK);
    console.info(
      `sentinel freeze (${env.REDIS_WAIT_REPLICAS ? `WAIT ${env.REDIS_WAIT_REPLICAS}` : 'no WAIT'}): ${result.all.accepted.size} accepted, ${during.failed.size} answered 5xx and ${during.unknown.size} unanswered during the failover; ` +
        `${result.ledger.lost.length} lost, ${result.counted} counted, ${result.ledger.unitsInDb} units in orders, ${result.ledger.remaining} remaining`,
    );
    return { ...result, during };
  }

  it('the primary frozen past the failover, then let go, with REDIS_WAIT_REPLICAS=2 (every replica): what it runs alone is never answered 202, and no 202 is lost', async () => {
    const { ledger, counted, during } = await freezeMidBurst(WAIT_FOR_EVERY_REPLICA);
    expect(ledger.lost).toEqual([]);
    // What the reconciler may count here are reservations the old primary took alone and that no replica
    // acknowledged: each was answered 503, never 202.
    expect(counted).toBeLessThanOrEqual(during.failed.size + during.unknown.size);
  });

  it('the same without WAIT: the ledger holds (nothing doubled, nothing oversold, units + remaining = stock); a loss is never over-counted', async () => {
    const { ledger, counted } = await freezeMidBurst({});
    // The reservations the old primary ran alone after it was let go were answered 202 and discarded by
    // its demotion; the reconciler counts those its checkpoint saw, which depends on when it looked, and
    // a worker names those it refuses (STALE_GENERATION, OVER_STOCK). Either counts what Redis accepted, and cannot
    // tell a 202 from a request whose answer a failing gateway never gave: the bound is the 202s lost plus
    // the requests without a clear answer that became nothing.
    expect(counted).toBeLessThanOrEqual(ledger.lost.length + ledger.unknownBecameNothing);
  });
});
