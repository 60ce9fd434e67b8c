import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { REBUY_RULE_DEFAULTS } from '@flashsale/domain';
import { buyerToken, createHttpClient, ordersOf } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const STOCK = 5;
/** A bot's pace: as fast as the per-buyer budget allows (10 requests/s per gateway process by default). */
const BOT_PAUSE_MS = 100;
/** The honest buyer's pace: two requests a second, a normal polling rate. */
const HONEST_PAUSE_MS = 500;
/** The bots keep trying at least this long, so a loop the rule did not stop shows in their order count. */
const BOTS_RUN_MS = 15_000;
/**
 * The bound the rule gives (with the default settings the gateway runs with): a bot's first rebuy is
 * immediate, but its second close leaves its unit free for the whole cooldown (30 s), which only a bot
 * closing its own order could take, freeing another. So the honest buyer, polling every 500 ms, gets a
 * unit before one cooldown has passed after the first bot's second close; those two cycles take a bot a
 * few seconds (the order must be in MySQL to be cancelled), 15 s on a busy machine. Not the load's pace:
 * the rule's, with a margin.
 */
const HONEST_SERVED_WITHIN_MS = REBUY_RULE_DEFAULTS.rebuyCooldownSeconds * 1000 + 15_000;

type HttpClient = ReturnType<typeof createHttpClient>;

interface BotLog {
  orders: number;
  cancels: number;
  refusals: Record<string, number>;
}

describe('a bot loop of cancel and rebuy against an honest buyer, with real processes', () => {
  it('cannot keep a unit from an honest buyer polling at 2 requests a second; no bot opens more orders than the rule allows; the ledger is exact', async () => {
    system = await startSystem({ workers: 1, reconciler: false });
    const { ctx } = system;
    const http = createHttpClient(system.gateways[0]!.url, 16);
    const saleId = await system.createSale({ stock: STOCK, paymentWindowSeconds: 120 });
    const bots = Array.from({ length: STOCK }, (_, i) => `bot-${i}`);
    const logs = new Map<string, BotLog>(bots.map((bot) => [bot, { orders: 0, cancels: 0, refusals: {} }]));

    // The bots hold the whole stock before the honest buyer arrives.
    const held = new Map<string, string>();
    for (const bot of bots) {
      const res = await purchase(http, saleId, bot);
      expect(res.status).toBe(202);
      held.set(bot, res.body.reservationId as string);
      logs.get(bot)!.orders++;
    }

    const started = performance.now();
    let botsStop = false;
    const loops = bots.map((bot) => botLoop(http, saleId, bot, held.get(bot)!, logs.get(bot)!, () => botsStop));

    let honestReservation: string | undefined;
    let honestPolls = 0;
    while (honestReservation === undefined && performance.now() - started < HONEST_SERVED_WITHIN_MS) {
      const res = await purchase(http, saleId, 'honest');
      honestPolls++;
      if (res.status === 202) honestReservation = res.body.reservationId as string;
      else await sleep(HONEST_PAUSE_MS);
    }
    const servedAfterMs = Math.round(performance.now() - started);
    while (performance.now() - started < BOTS_RUN_MS) await sleep(100);
    botsStop = true;
    await Promise.all(loops);
    http.close();
    console.log(JSON.stringify({ servedAfterMs, honestPolls, bots: Object.fromEntries(logs) }));

    expect(honestReservation, `the honest buyer got no unit in ${HONEST_SERVED_WITHIN_MS} ms (${honestPolls} polls)`).toBeDefined();
    // Every order a bot opened is in MySQL: none opened more than the rule's most.
    const orders = await until(
      () => ordersOf(ctx.prisma, saleId),
      (rows) => rows.length === [...logs.values()].reduce((sum, log) => sum + log.orders, 1),
      60_000,
    );
    for (const bot of bots)
      expect(orders.filter((o) => o.userId === bot).length).toBeLessThanOrEqual(REBUY_RULE_DEFAULTS.maxOrdersPerBuyer);
    expect(orders.filter((o) => o.userId === 'honest').map((o) => [o.reservationId, o.status])).toEqual([[honestReservation, 'created']]);

    // The ledger, once every cancel's units are back: units in live orders + remaining = stock.
    const ledger = await until(
      async () => {
        const rows = await ordersOf(ctx.prisma, saleId);
        const live = rows.filter((o) => o.status === 'created' || o.status === 'paid').reduce((sum, o) => sum + o.quantity, 0);
        const pending = await ctx.prisma.stockReturn.count({ where: { saleId, state: 'pending' } });
        const remaining = (await ctx.store.sale(saleId).state())!.remaining;
        return { live, remaining, pending };
      },
      (l) => l.pending === 0 && l.live + l.remaining === STOCK,
      60_000,
    );
    expect(ledger.live + ledger.remaining).toBe(STOCK);
  }, 240_000);
});

function purchase(http: HttpClient, saleId: number, buyer: string) {
  return http.send('POST', `/api/sales/${saleId}/purchase`, { headers: { authorization: `Bearer ${buyerToken(buyer)}` }, body: {} });
}

/**
 * A bot: cancels the order it holds as soon as it is cancellable and buys again at once, over and over,
 * one request per BOT_PAUSE_MS at most; whatever it is refused, it asks again at that pace.
 */
async function botLoop(http: HttpClient, saleId: number, bot: string, first: string, log: BotLog, stopped: () => boolean): Promise<void> {
  const auth = { authorization: `Bearer ${buyerToken(bot)}` };
  let holding: string | undefined = first;
  while (!stopped()) {
    if (holding !== undefined) {
      const res = await http.send('POST', `/api/reservations/${holding}/cancel`, { headers: auth });
      if (res.status === 200) {
        log.cancels++;
        holding = undefined;
        continue;
      }
      log.refusals[String(res.body.code)] = (log.refusals[String(res.body.code)] ?? 0) + 1;
    } else {
      const res = await purchase(http, saleId, bot);
      if (res.status === 202) {
        log.orders++;
        holding = res.body.reservationId as string;
        continue;
      }
      log.refusals[String(res.body.code)] = (log.refusals[String(res.body.code)] ?? 0) + 1;
    }
    await sleep(BOT_PAUSE_MS);
  }
}
