import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { DOOR_TERMS_DEFAULTS, signPaymentEvent } from '@flashsale/domain';
import { buyerToken } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { createLiveSale, redisNow, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { createQueuedSale, doorBuyer } from '../../../../test/support/door.ts';
import { writeOrdersOf } from '../../../../test/support/orders.ts';
import { until } from '../../../../test/support/until.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const admin = () => bearer(ctx.config.ADMIN_TOKEN);
const buyer = (saleId: number, name = `buyer-${randomUUID()}`) => doorBuyer(gateway.url, saleId, name);
const keysOf = (saleId: number) => saleKeys(ctx.config.REDIS_PREFIX, saleId);
const setAdmission = (saleId: number | string, body: unknown) =>
  fetch(`${gateway.url}/api/admin/sales/${saleId}/admission`, {
    method: 'POST',
    headers: { ...admin(), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** What a refusal must leave as it was: the sale's stock, buyers, stream and door. */
async function redisFootprint(saleId: number) {
  const keys = keysOf(saleId);
  const [meta, buyers, stream, queue, turns] = await Promise.all([
    ctx.redis.hgetall(keys.meta),
    ctx.redis.hgetall(keys.buyers),
    ctx.redis.xlen(keys.stream),
    ctx.redis.zrange(keys.queue, 0, -1, 'WITHSCORES'),
    ctx.redis.zrange(keys.turns, 0, -1, 'WITHSCORES'),
  ]);
  return { meta, buyers, stream, queue, turns };
}

const waitForStart = async (startsAt: number) => {
  await until(
    () => redisNow(ctx.redis),
    (now) => now >= startsAt,
    30_000,
  );
};

describe('POST /api/admin/sales with admission', () => {
  it('creates a queued sale: 201 with its settings (defaults for those not given), in MySQL and in Redis', async () => {
    const { id, body } = await createQueuedSale(ctx, gateway.url, { startsIn: 60_000, admitPerSecond: 7.5 });

    expect(body.admission).toEqual({
      mode: 'queue',
      preQueueSeconds: 3600,
      admitPerSecond: 7.5,
      admissionTtlSeconds: DOOR_TERMS_DEFAULTS.admissionTtlSeconds,
      noShowFactor: DOOR_TERMS_DEFAULTS.noShowFactor,
      paused: false,
      showUpSeconds: DOOR_TERMS_DEFAULTS.showUpSeconds,
      challenge: 'off',
      challengeMaxNumber: DOOR_TERMS_DEFAULTS.challengeMaxNumber,
      requireClaim: null,
      maxQueueSize: null,
    });
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id } })).toMatchObject({
      admissionMode: 'queue',
      preQueueSeconds: 3600,
      admitPerSecond: 7.5,
      admissionTtlSeconds: DOOR_TERMS_DEFAULTS.admissionTtlSeconds,
      noShowFactor: 1,
      admissionPaused: false,
      showUpSeconds: DOOR_TERMS_DEFAULTS.showUpSeconds,
      challenge: 'off',
      challengeMaxNumber: DOOR_TERMS_DEFAULTS.challengeMaxNumber,
      requireClaim: null,
      maxQueueSize: null,
    });
    expect(await ctx.redis.hgetall(keysOf(id).meta)).toMatchObject({
      adm: '1',
      q_pre: '3600',
      q_rate: '7.5',
      q_ttl: String(DOOR_TERMS_DEFAULTS.admissionTtlSeconds),
      q_factor: '1',
      q_paused: '0',
      q_show: String(DOOR_TERMS_DEFAULTS.showUpSeconds),
      q_pow: 'off',
      q_pow_max: String(DOOR_TERMS_DEFAULTS.challengeMaxNumber),
      q_claim: '',
      q_max: '',
    });
    expect((await fetch(`${gateway.url}/api/sales/${id}`).then((r) => r.json())) as Record<string, unknown>).toMatchObject({
      id,
      status: 'scheduled',
      admission: body.admission,
    });
  });

  it('keeps an open sale as it was: { mode: "open" } and no admission answer the same, with no door in MySQL or Redis', async () => {
    const now = await redisNow(ctx.redis);
    const sale = { name: 'Open', stock: 3, startsAt: new Date(now - 1000).toISOString(), endsAt: new Date(now + 60_000).toISOString() };
    const create = (body: unknown) =>
      fetch(`${gateway.url}/api/admin/sales`, {
        method: 'POST',
        headers: { ...admin(), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    const plain = (await (await create(sale)).json()) as Record<string, unknown>;
    const open = (await (await create({ ...sale, admission: { mode: 'open' } })).json()) as Record<string, unknown>;

    expect(Object.keys(plain)).toEqual([
      'id',
      'name',
      'stock',
      'startsAt',
      'endsAt',
      'perUserLimit',
      'paymentWindowSeconds',
      'maxOrdersPerBuyer',
      'rebuyCooldownSeconds',
    ]);
    expect({ ...open, id: 0 }).toEqual({ ...plain, id: 0 });
    for (const id of [plain.id as number, open.id as number]) {
      expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id } })).toMatchObject({
        admissionMode: 'open',
        preQueueSeconds: null,
        admitPerSecond: null,
      });
      const meta = await ctx.redis.hgetall(keysOf(id).meta);
      expect(Object.keys(meta).filter((field) => field === 'adm' || field.startsWith('q_'))).toEqual([]);
      expect(Object.keys((await fetch(`${gateway.url}/api/sales/${id}`).then((r) => r.json())) as object)).not.toContain('admission');
    }
  });

  it('400 for bad admission settings, naming each', async () => {
    const now = await redisNow(ctx.redis);
    const res = await fetch(`${gateway.url}/api/admin/sales`, {
      method: 'POST',
      headers: { ...admin(), 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Bad door',
        stock: 3,
        startsAt: new Date(now).toISOString(),
        endsAt: new Date(now + 60_000).toISOString(),
        admission: { mode: 'queue', admitPerSecond: 0, admissionTtlSeconds: 0.5, noShowFactor: 0.5, preQueueSeconds: -1 },
      }),
    });
    expect(res.status).toBe(400);
    const { detail, code } = (await res.json()) as { detail: string; code: string };
    expect(code).toBe('INVALID_REQUEST');
    for (const field of ['admitPerSecond', 'admissionTtlSeconds', 'noShowFactor', 'preQueueSeconds']) expect(detail).toContain(field);
    const lottery = await fetch(`${gateway.url}/api/admin/sales`, {
      method: 'POST',
      headers: { ...admin(), 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'x',
        stock: 1,
        startsAt: new Date(now).toISOString(),
        endsAt: new Date(now + 1000).toISOString(),
        admission: { mode: 'lottery' },
      }),
    });
    expect(((await lottery.json()) as { code: string }).code).toBe('INVALID_REQUEST');
  });
});

describe('POST /api/sales/:id/queue (join)', () => {
  it('before the start: 200 waiting, no place yet (drawn at startsAt), Retry-After up to the start, a ticket; joining again answers the same place and writes nothing', async () => {
    const { id } = await createQueuedSale(ctx, gateway.url, { startsIn: 20_000 });
    const alice = buyer(id, 'alice');

    const first = await alice.join();

    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      saleId: id,
      state: 'waiting',
      position: null,
      ahead: null,
      etaSeconds: expect.any(Number),
      admittedUntil: null,
      ticket: expect.any(String),
    });
    expect(first.body.etaSeconds).toBeGreaterThanOrEqual(18);
    expect(first.body.etaSeconds).toBeLessThanOrEqual(20);
    expect(Number(first.retryAfter)).toBeGreaterThanOrEqual(18);
    const before = await redisFootprint(id);
    const again = await alice.join();
    // The same place and ticket; the ETA (whole seconds to the start) may have crossed a second meanwhile.
    expect(again.body).toEqual({ ...first.body, etaSeconds: expect.any(Number) });
    expect(first.body.etaSeconds! - again.body.etaSeconds!).toBeGreaterThanOrEqual(0);
    expect(first.body.etaSeconds! - again.body.etaSeconds!).toBeLessThanOrEqual(1);
    expect(await redisFootprint(id)).toEqual(before);
    expect(await ctx.redis.zcard(keysOf(id).queue)).toBe(1);
  });

  it('409 QUEUE_NOT_OPEN with opensAt before startsAt - preQueueSeconds; nothing written', async () => {
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, { startsIn: 3_600_000, preQueueSeconds: 60 });
    const before = await redisFootprint(id);
    const opensAt = new Date(startsAt - 60_000).toISOString();

    await expectProblem(
      await fetch(`${gateway.url}/api/sales/${id}/queue`, { method: 'POST', headers: bearer(buyerToken('early')) }),
      409,
      'QUEUE_NOT_OPEN',
      `the waiting room opens at ${opensAt}`,
      { opensAt },
    );

    expect(await redisFootprint(id)).toEqual(before);
  });

  it('409 SALE_NOT_QUEUED for an open sale (join, status, and the admin control), 410 SALE_ENDED for an ended queued sale, 404 for no sale, 401 without a token; nothing written', async () => {
    const open = await createLiveSale(ctx, { stock: 3 });
    const ended = await createQueuedSale(ctx, gateway.url, { startsIn: -2000, endsIn: 500 });
    await until(
      () => redisNow(ctx.redis),
      (now) => now >= ended.startsAt + 2500,
    );
    const token = bearer(buyerToken('someone'));
    const openBefore = await redisFootprint(open.id);
    const endedBefore = await redisFootprint(ended.id);

    const notQueued = 'sale ' + open.id + ' has no waiting room: buy directly';
    await expectProblem(
      await fetch(`${gateway.url}/api/sales/${open.id}/queue`, { method: 'POST', headers: token }),
      409,
      'SALE_NOT_QUEUED',
      notQueued,
    );
    await expectProblem(await fetch(`${gateway.url}/api/sales/${open.id}/queue`, { headers: token }), 409, 'SALE_NOT_QUEUED', notQueued);
    await expectProblem(
      await setAdmission(open.id, { paused: true }),
      409,
      'SALE_NOT_QUEUED',
      `sale ${open.id} has no waiting room: buy directly`,
    );
    await expectProblem(
      await fetch(`${gateway.url}/api/sales/${ended.id}/queue`, { method: 'POST', headers: token }),
      410,
      'SALE_ENDED',
      `sale ${ended.id} has ended`,
    );
    // Another buyer: one buyer's joins are budgeted (QUEUE_JOINS_PER_SECOND), refusals too.
    await expectProblem(
      await fetch(`${gateway.url}/api/sales/999999999/queue`, { method: 'POST', headers: bearer(buyerToken('someone-else')) }),
      404,
      'SALE_NOT_FOUND',
      'no sale has the id 999999999',
    );
    await expectProblem(
      await fetch(`${gateway.url}/api/sales/999999999/queue`, { headers: token }),
      404,
      'SALE_NOT_FOUND',
      'no sale has the id 999999999',
    );
    expect((await fetch(`${gateway.url}/api/sales/${ended.id}/queue`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${gateway.url}/api/sales/${ended.id}/queue`)).status).toBe(401);

    expect(await redisFootprint(open.id)).toEqual(openBefore);
    expect(await redisFootprint(ended.id)).toEqual(endedBefore);
    // The ended sale's status is told as such, to anyone.
    const late = await buyer(ended.id).status();
    expect(late).toMatchObject({ status: 200, body: { state: 'ended', position: null }, retryAfter: '3600' });
  });
});

describe('purchases behind the door', () => {
  it('403 NOT_ADMITTED for a buyer not in the queue and one still waiting, changing nothing; 202 once admitted, then 409 ALREADY_PURCHASED', async () => {
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, { stock: 5, admitPerSecond: 1, startsIn: 1500 });
    const first = buyer(id, 'first');
    const second = buyer(id, 'second');
    const stranger = buyer(id, 'stranger');
    await first.join();
    await second.join();
    await waitForStart(startsAt);
    // Each is placed by the draw: who is first is not known before it.
    const ranks = await Promise.all([first, second].map(async (b) => ({ b, rank: await b.rank() })));
    const [ahead, behind] = ranks.sort((x, y) => x.rank - y.rank).map(({ b }) => b);
    await ahead!.waitFor('admitted');
    const before = await redisFootprint(id);

    await expectProblem(
      await fetch(`${gateway.url}/api/sales/${id}/purchase`, { method: 'POST', headers: bearer(buyerToken('stranger')) }),
      403,
      'NOT_ADMITTED',
      `this sale is bought through its waiting room: join it (POST /api/sales/${id}/queue) and buy while your turn runs`,
    );
    const waiting = await behind!.status();
    if (waiting.body.state === 'waiting') expect((await behind!.purchase()).status).toBe(403);
    expect(await redisFootprint(id)).toMatchObject({ buyers: before.buyers, stream: before.stream, meta: { remaining: '5' } });
    expect((await stranger.status()).body).toMatchObject({ state: 'not_joined', ticket: null });

    const bought = await ahead!.purchase();
    expect(bought).toMatchObject({ status: 202, body: { saleId: id, quantity: 1, status: 'pending' } });
    const again = await ahead!.purchase();
    expect(again).toMatchObject({ status: 409, body: { code: 'ALREADY_PURCHASED', reservationId: bought.body.reservationId } });
    // The turn is used: said as such (the order says the rest), and no longer counts as unused.
    expect((await ahead!.status()).body).toMatchObject({ state: 'used', admittedUntil: null });
    expect(Number(await ctx.redis.zscore(keysOf(id).turns, ahead!.userId))).toBeLessThan(0);
  });

  it('an admission that ran out (TTL) is 403 NOT_ADMITTED and `expired`; the frontier moves on to the next in line within the TTL', async () => {
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, {
      stock: 1,
      admitPerSecond: 100,
      admissionTtlSeconds: 1,
      startsIn: 1500,
    });
    const buyers = ['a', 'b', 'c'].map((name) => buyer(id, `${name}-${randomUUID()}`));
    for (const b of buyers) await b.join();
    await waitForStart(startsAt);
    const placed = await Promise.all(buyers.map(async (b) => ({ b, rank: await b.rank() })));
    const [first, second, third] = placed.sort((x, y) => x.rank - y.rank).map(({ b }) => b);

    const admitted = await first!.waitFor('admitted');
    expect(Date.parse(admitted.admittedUntil!)).toBeGreaterThan(await redisNow(ctx.redis));
    // Stock 1, factor 1: only one turn runs at a time.
    expect((await second!.status()).body).toMatchObject({ state: 'waiting', position: 1, ahead: 0 });

    const expiredAt = Date.parse(admitted.admittedUntil!);
    await second!.waitFor('admitted', 60_000);
    // Abandonment delays the queue by the TTL, not for good: on an idle machine the next turn comes
    // within the gateway's frontier age and a poll of the expiry (about 0.3 s); the bound leaves room for
    // a machine running other work, the alternative (a turn that never ends) being forever.
    expect(await redisNow(ctx.redis)).toBeLessThan(expiredAt + 15_000);
    expect((await first!.status()).body).toMatchObject({ state: 'expired', position: null });
    expect(await first!.purchase()).toMatchObject({ status: 403, body: { code: 'NOT_ADMITTED' } });
    expect(await second!.purchase()).toMatchObject({ status: 202 });
    // The last unit is gone but not paid for: it may come back, so the third waits, with no ETA.
    expect(
      await until(
        async () => (await third!.status()).body,
        (body) => body.etaSeconds === null,
        60_000,
      ),
    ).toMatchObject({ state: 'waiting', position: 1 });
    expect(Number(await ctx.redis.hget(keysOf(id).door, 'abandoned'))).toBe(1);
  });
});

describe('bots gain nothing', () => {
  it('admits in queue order whoever asks how often: buyers hammering at 50 requests/s are admitted no earlier than their place', async () => {
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, {
      stock: 100,
      admitPerSecond: 10,
      admissionTtlSeconds: 600,
      startsIn: 1500,
    });
    const crowd = Array.from({ length: 30 }, (_, i) => ({
      b: buyer(id, `${i % 2 === 0 ? 'bot' : 'polite'}-${i}-${randomUUID()}`),
      bot: i % 2 === 0,
    }));
    for (const { b } of crowd) await b.join();
    await waitForStart(startsAt);
    const ranks = new Map(await Promise.all(crowd.map(async ({ b }) => [b.userId, await b.rank()] as const)));

    const admittedAt = new Map<string, number>();
    const deadline = Date.now() + 15_000;
    await Promise.all(
      crowd.map(async ({ b, bot }) => {
        while (Date.now() < deadline) {
          const asked = await b.status();
          if (asked.body.state === 'admitted') {
            admittedAt.set(b.userId, Date.parse(asked.body.admittedUntil!) - 600_000);
            if (bot) await b.purchase();
            return;
          }
          // A bot asks every 20 ms (and is refused 429 past its budget); a polite buyer when told.
          await new Promise((resolve) => setTimeout(resolve, bot ? 20 : Number(asked.retryAfter ?? 1) * 1000));
        }
      }),
    );

    expect(admittedAt.size).toBe(crowd.length);
    // The turn each was given (admittedUntil - TTL, on Redis's clock) follows the queue, never the asking.
    const byRank = [...admittedAt].sort(([a], [b]) => ranks.get(a)! - ranks.get(b)!).map(([, at]) => at);
    expect(byRank).toEqual([...byRank].sort((a, b) => a - b));
    const mean = (bots: boolean) => {
      const ranksOf = crowd.filter(({ bot }) => bot === bots).map(({ b }) => ranks.get(b.userId)!);
      return ranksOf.reduce((sum, rank) => sum + rank, 0) / ranksOf.length;
    };
    console.info(
      `bots' mean rank ${mean(true).toFixed(1)}, polite buyers' ${mean(false).toFixed(1)} (of 0..29: the draw's, not the polling's)`,
    );
  });
});

describe('queue tickets', () => {
  it("400 INVALID_QUEUE_TICKET for another buyer's, another sale's, an altered and a forged ticket; nothing changes; the buyer's own is answered", async () => {
    const { id } = await createQueuedSale(ctx, gateway.url, { startsIn: 30_000 });
    const other = await createQueuedSale(ctx, gateway.url, { startsIn: 30_000 });
    const mallory = buyer(id, 'mallory');
    const victim = buyer(id, 'victim');
    await mallory.join();
    await victim.join();
    const elsewhere = buyer(other.id, 'mallory');
    await elsewhere.join();
    const before = await redisFootprint(id);
    const [version, sale, user, score, rank, epoch, signature] = mallory.ticket!.split('.');
    const altered = [version, sale, user, '0', rank, epoch, signature].join('.');
    // Another epoch would have the gateway take the ticket as proof of a place in a door Redis lost.
    const otherEpoch = [version, sale, user, score, rank, String(Number(epoch) - 1), signature].join('.');
    const forged = [version, sale, user, score, rank, epoch, 'A'.repeat(43)].join('.');

    const cases: [string, string][] = [
      [victim.ticket!, "the Queue-Ticket is another buyer's; ask without it to get yours"],
      [elsewhere.ticket!, "the Queue-Ticket is another sale's; ask without it to get yours"],
      [altered, 'the Queue-Ticket has a signature that does not match; ask without it to get yours'],
      [otherEpoch, 'the Queue-Ticket has a signature that does not match; ask without it to get yours'],
      [forged, 'the Queue-Ticket has a signature that does not match; ask without it to get yours'],
      ['not a ticket', 'the Queue-Ticket is malformed; ask without it to get yours'],
    ];
    for (const [ticket, detail] of cases) {
      await expectProblem(
        await fetch(`${gateway.url}/api/sales/${id}/queue`, { headers: { ...bearer(buyerToken('mallory')), 'queue-ticket': ticket } }),
        400,
        'INVALID_QUEUE_TICKET',
        detail,
      );
    }
    // The buyer's budget (10 requests a second) spent: the rest a second later.
    await sleep(1100);
    // A join takes a ticket too (to come back to a place in a door Redis lost): judged the same.
    const otherEpochJoin = await fetch(`${gateway.url}/api/sales/${id}/queue`, {
      method: 'POST',
      headers: { ...bearer(buyerToken('mallory')), 'queue-ticket': otherEpoch },
    });
    await expectProblem(
      otherEpochJoin,
      400,
      'INVALID_QUEUE_TICKET',
      'the Queue-Ticket has a signature that does not match; ask without it to get yours',
    );
    // A ticket is no admission: the purchase is judged by Redis, whatever ticket comes with it.
    expect(
      (
        await fetch(`${gateway.url}/api/sales/${id}/purchase`, {
          method: 'POST',
          headers: { ...bearer(buyerToken('mallory')), 'queue-ticket': victim.ticket! },
        })
      ).status,
    ).toBe(403);

    expect(await redisFootprint(id)).toEqual(before);
    expect((await mallory.status()).status).toBe(200);
  });

  it('a buyer Redis no longer holds (it went back: a failover to a replica behind) is put back at the place their ticket proves, not told not_joined', async () => {
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, { startsIn: 1500, admitPerSecond: 0.01 });
    const buyers = ['first', 'second', 'third'].map((name) => buyer(id, `went-back-${id}-${name}`));
    for (const b of buyers) await b.join();
    await waitForStart(startsAt);
    const ranked = (await Promise.all(buyers.map(async (b) => ({ b, rank: await b.rank() })))).sort((x, y) => x.rank - y.rank);
    const last = ranked[2]!.b;
    const score = Number(last.ticket!.split('.')[3]);
    // The replica took over before the last of them joined: the queue holds the other two.
    await ctx.redis.zrem(keysOf(id).queue, last.userId);

    // Their ticket's rank is beyond the queue Redis holds: looked up, and put back with the ticket's score.
    const back = await until(
      async () => ({ asked: await last.status(), score: await ctx.redis.zscore(keysOf(id).queue, last.userId) }),
      (r) => r.score !== null,
      10_000,
    );
    expect(Number(back.score)).toBe(score);
    expect(back.asked.body).toMatchObject({ state: 'waiting', position: 3, ahead: 2 });
  });
});

describe('the stock bound, sold out, and units that come back', () => {
  it('never lets admitted-and-unused exceed the remaining units; tells everyone still waiting sold_out once the last unit is paid for; a cancelled unit goes to the next in line', async () => {
    const stock = 3;
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, { stock, admitPerSecond: 1000, startsIn: 1500 });
    const crowd = Array.from({ length: 10 * stock }, (_, i) => buyer(id, `crowd-${i}-${randomUUID()}`));
    for (const b of crowd) await b.join();
    await waitForStart(startsAt);
    const placed = (await Promise.all(crowd.map(async (b) => ({ b, rank: await b.rank() })))).sort((x, y) => x.rank - y.rank);
    expect(placed.map(({ rank }) => rank)).toEqual(crowd.map((_, i) => i));
    const inLine = placed.map(({ b }) => b);

    // The door is asked many times; it admits no more than the 3 units allow. Six rounds: with the join,
    // the rank and the checks below, no buyer asks more than 9 times, inside the per-buyer budget
    // (RATE_LIMIT_PER_SECOND, 10) however fast the machine answers.
    for (let i = 0; i < 6; i += 1) await Promise.all(inLine.map((b) => b.status()));
    const unused = await ctx.redis.zcount(keysOf(id).turns, '(0', '+inf');
    expect(unused).toBe(stock);
    for (const b of inLine.slice(0, stock)) expect((await b.status()).body).toMatchObject({ state: 'admitted' });
    expect((await inLine[stock]!.status()).body).toMatchObject({ state: 'waiting', position: 1, etaSeconds: null });

    const reservations: string[] = [];
    for (const b of inLine.slice(0, stock)) reservations.push(String((await b.purchase()).body.reservationId));
    await writeOrdersOf(ctx, id);
    // Nothing left, but unpaid orders may come back: the crowd waits, told no ETA.
    expect((await inLine[stock]!.waitFor('waiting')).etaSeconds).toBeNull();

    // The first buyer cancels: the unit goes to the next in line, not to whoever asks first.
    const cancel = await fetch(`${gateway.url}/api/reservations/${reservations[0]}/cancel`, {
      method: 'POST',
      headers: bearer(buyerToken(inLine[0]!.userId)),
    });
    expect(cancel.status).toBe(200);
    for (const b of inLine.slice(stock + 1)) expect(await b.purchase()).toMatchObject({ status: 403 });
    await inLine[stock]!.waitFor('admitted');
    expect((await inLine[stock + 1]!.status()).body).toMatchObject({ state: 'waiting', position: 1 });
    const next = await inLine[stock]!.purchase();
    expect(next.status).toBe(202);
    reservations[0] = String(next.body.reservationId);
    await writeOrdersOf(ctx, id);

    // Every live order paid: nothing can come back, and everyone still waiting is told so.
    for (const reservationId of reservations) {
      const body = JSON.stringify({ id: `evt-${randomUUID()}`, type: 'payment.succeeded', reservationId, amountCents: 100 });
      const res = await fetch(`${gateway.url}/api/payments/events`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'payment-signature': signPaymentEvent(ctx.config.PAYMENT_WEBHOOK_SECRET, Math.floor(Date.now() / 1000), body),
        },
        body,
      });
      expect(await res.json()).toEqual({ status: 'paid' });
    }
    // Told at the next frontier read (DOOR_FRONTIER_MAX_AGE_MS, 250 ms, on an idle machine), not when
    // the sale ends an hour later: the bound leaves room for a machine running other work.
    const told = Date.now();
    for (const b of inLine.slice(stock + 1)) await b.waitFor('sold_out', 60_000);
    expect(Date.now() - told).toBeLessThan(30_000);
    const last = await inLine.at(-1)!.status();
    expect(last).toMatchObject({ body: { state: 'sold_out', position: null }, retryAfter: '30' });

    // Who bought: the first three in line, then the fourth in place of the one who cancelled.
    const orders = await ctx.prisma.order.findMany({ where: { saleId: id }, orderBy: { reservedAt: 'asc' } });
    expect(orders.map((o) => [o.userId, o.status])).toEqual([
      [inLine[0]!.userId, 'cancelled'],
      [inLine[1]!.userId, 'paid'],
      [inLine[2]!.userId, 'paid'],
      [inLine[3]!.userId, 'paid'],
    ]);
    const state = await ctx.store.sale(id).state();
    expect(state?.remaining).toBe(0);
  });
});

describe('POST /api/admin/sales/:id/admission', () => {
  it('pauses the door (nobody new admitted, admitted buyers keep their turn), resumes it, changes the rate; in MySQL and Redis', async () => {
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, { stock: 100, admitPerSecond: 1000, startsIn: 1500 });
    const paused = await setAdmission(id, { paused: true });
    expect(paused.status).toBe(200);
    expect(await paused.json()).toMatchObject({
      id,
      admission: { mode: 'queue', paused: true, admitPerSecond: 1000 },
      door: { queued: 0, admitted: 0, waiting: 0 },
    });
    const b = buyer(id);
    await b.join();
    await waitForStart(startsAt);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await b.status()).body).toMatchObject({ state: 'waiting', position: 1, etaSeconds: null });

    const resumed = await setAdmission(id, { paused: false, admitPerSecond: 2.5 });
    expect(await resumed.json()).toMatchObject({ admission: { paused: false, admitPerSecond: 2.5 }, door: { queued: 1 } });
    await b.waitFor('admitted', 5000);
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id } })).toMatchObject({ admissionPaused: false, admitPerSecond: 2.5 });
    expect(await ctx.redis.hgetall(keysOf(id).meta)).toMatchObject({ q_paused: '0', q_rate: '2.5' });
  });

  it('400 for a bad body, 404 for no sale, 401 without the admin token', async () => {
    const { id } = await createQueuedSale(ctx, gateway.url, { startsIn: 60_000 });
    expect((await setAdmission(id, { admitPerSecond: 0 })).status).toBe(400);
    expect((await setAdmission(id, { paused: 'yes' })).status).toBe(400);
    expect((await setAdmission(id, { other: 1 })).status).toBe(400);
    await expectProblem(await setAdmission(999999999, { paused: true }), 404, 'SALE_NOT_FOUND', 'no sale has the id 999999999');
    expect(
      (
        await fetch(`${gateway.url}/api/admin/sales/${id}/admission`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(401);
  });
});
