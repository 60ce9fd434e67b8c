import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { solveChallenge } from 'altcha-lib/v1';
import { buyerToken, solveDoorChallenge, spawnGateway, type AppProcess, type DoorChallenge } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { startSystem, type System } from '../support/system.ts';
import { createQueuedSale, type QueuedSaleOptions } from '../support/door.ts';
import { bearer } from '../support/http.ts';
import { sampleOf, scrape } from '../support/metrics-text.ts';
import { doorBuyer } from '../support/door.ts';
import { until } from '../support/until.ts';

// The door against account farms (issue 41), through real gateway processes: the join budgets, the
// queue's cap, the claim a sale may require, and the proof of work a sale may ask at join.

let system: System;
let budgeted: AppProcess & { url: string };
beforeAll(async () => {
  system = await startSystem({ workers: 1 });
  // A gateway with the join budgets on (the harness turns the per-address one off for its crowds).
  budgeted = await spawnGateway({ ...system.env, QUEUE_JOINS_PER_ADDRESS_PER_SECOND: '5' });
});
afterAll(async () => {
  await budgeted?.kill('SIGTERM');
  await system?.stop();
});

const url = () => system.gateways[0]!.url;
const sale = (options: QueuedSaleOptions) => createQueuedSale(system.ctx, url(), options);
const join = (base: string, saleId: number, token: string, body?: unknown) =>
  fetch(`${base}/api/sales/${saleId}/queue`, {
    method: 'POST',
    headers: { ...bearer(token), ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
const queued = (saleId: number) => system.ctx.redis.zrange(saleKeys(system.ctx.config.REDIS_PREFIX, saleId).queue, 0, -1);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The problem document of a refusal, its status and code checked (its detail is the door's to word). */
async function expectProblem(res: Response, status: number, code: string): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>;
  expect({ status: res.status, code: body.code }, JSON.stringify(body)).toEqual({ status, code });
  return body;
}

/** A challenge of the sale for `userId`, solved as a browser's ALTCHA client does: the payload it sends. */
async function solved(saleId: number, userId: string): Promise<string> {
  const res = await fetch(`${url()}/api/sales/${saleId}/queue/challenge`, { headers: bearer(buyerToken(userId)) });
  expect(res.status).toBe(200);
  const challenge = (await res.json()) as { algorithm: string; challenge: string; salt: string; signature: string; maxnumber: number };
  const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
  return Buffer.from(
    JSON.stringify({
      algorithm: challenge.algorithm,
      challenge: challenge.challenge,
      number: solution!.number,
      salt: challenge.salt,
      signature: challenge.signature,
    }),
  ).toString('base64');
}

describe('budgets and the cap', () => {
  it('joins past the per-address budget are 429 RATE_LIMITED with Retry-After, and never reach Redis; a second buyer budget refuses one account joining again and again', async () => {
    const { id } = await sale({ stock: 5, startsIn: 60_000 });
    // The budgets count per wall-clock second, so how many pass depends on how many seconds the joins
    // straddle: sent at once, and bounded by the seconds they took (at most ceil(elapsed) + 1 windows).
    const windowsSpanned = (startedAt: number) => Math.ceil((performance.now() - startedAt) / 1000) + 1;
    let startedAt = performance.now();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => join(budgeted.url, id, buyerToken(`flood-${i}`))));
    const windows = windowsSpanned(startedAt);
    expect(windows, 'thirty joins took more than four seconds').toBeLessThanOrEqual(5);
    const refused = answers.filter((res) => res.status === 429);
    // 5 a second from this address.
    expect(answers.filter((res) => res.status === 200).length).toBeLessThanOrEqual(5 * windows);
    expect(refused.length).toBe(30 - answers.filter((res) => res.status === 200).length);
    for (const res of refused) await expectProblem(res, 429, 'RATE_LIMITED');
    expect(refused[0]!.headers.get('retry-after')).toBe('1');
    expect((await queued(id)).length).toBe(30 - refused.length);

    // One account: QUEUE_JOINS_PER_SECOND (2) a second, whatever address. Five joins at once straddle at
    // most two seconds when they take under one: then at least one is past the budget, and an account's
    // first joins past it are 429 (its third strike would be set aside, a shadow answer). A round slower
    // than a second proves nothing either way and is sent again with a fresh account.
    let again: number[] = [];
    for (let round = 0; round < 5 && again.length === 0; round += 1) {
      startedAt = performance.now();
      const statuses = (await Promise.all(Array.from({ length: 5 }, () => join(url(), id, buyerToken(`one-account-${round}`))))).map(
        (res) => res.status,
      );
      if (performance.now() - startedAt < 1000) again = statuses;
    }
    expect(again, 'no round of five joins answered within a second').toHaveLength(5);
    expect(again.filter((status) => status === 429).length).toBeGreaterThanOrEqual(1);
  });

  it('maxQueueSize: a new joiner past the cap is 409 QUEUE_FULL (with the cap), nothing written; a buyer already in the queue is answered their place', async () => {
    const { id } = await sale({ stock: 5, startsIn: 60_000, maxQueueSize: 3 });
    for (const name of ['cap-a', 'cap-b', 'cap-c']) expect((await join(url(), id, buyerToken(name))).status).toBe(200);
    const full = await join(url(), id, buyerToken('cap-d'));
    const problem = await expectProblem(full, 409, 'QUEUE_FULL');
    expect(problem.maxQueueSize).toBe(3);
    expect((await queued(id)).sort()).toEqual(['cap-a', 'cap-b', 'cap-c']);
    expect((await join(url(), id, buyerToken('cap-b'))).status).toBe(200);
  });

  it('validates every new setting strictly: 400 INVALID_REQUEST naming each bad one', async () => {
    const now = Date.now();
    const res = await fetch(`${url()}/api/admin/sales`, {
      method: 'POST',
      headers: { ...bearer(system.ctx.config.ADMIN_TOKEN), 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Bad door',
        stock: 5,
        startsAt: new Date(now + 60_000).toISOString(),
        endsAt: new Date(now + 3_600_000).toISOString(),
        admission: {
          mode: 'queue',
          admissionTtlSeconds: 30,
          showUpSeconds: 60,
          challenge: 'hard',
          challengeMaxNumber: 10,
          requireClaim: 'exp',
          maxQueueSize: 0,
        },
      }),
    });
    const problem = await expectProblem(res, 400, 'INVALID_REQUEST');
    const errors = (problem.errors as string[]).join('\n');
    for (const field of ['admission.challenge', 'admission.challengeMaxNumber', 'admission.requireClaim', 'admission.maxQueueSize'])
      expect(errors).toContain(field);
  });
});

describe('known customers', () => {
  it('requireClaim: a buyer whose token lacks the claim, or holds it other than true, is 403 CLAIM_REQUIRED and not queued; with it, joined', async () => {
    const { id, body } = await sale({ stock: 5, startsIn: 60_000, requireClaim: 'verified' });
    expect(body.admission).toMatchObject({ requireClaim: 'verified', challenge: 'off', showUpSeconds: 20, maxQueueSize: null });
    await expectProblem(await join(url(), id, buyerToken('fresh')), 403, 'CLAIM_REQUIRED');
    await expectProblem(await join(url(), id, buyerToken('half', { claims: { verified: 'yes' } })), 403, 'CLAIM_REQUIRED');
    expect((await join(url(), id, buyerToken('known', { claims: { verified: true } }))).status).toBe(200);
    expect(await queued(id)).toEqual(['known']);
  });
});

describe('a join costs work', () => {
  it("challenge pow: no solution, a wrong one and another buyer's are 403 CHALLENGE_REQUIRED and queue nobody; the buyer's own solved challenge joins, and joins once", async () => {
    const { id } = await sale({ stock: 5, startsIn: 60_000, challenge: 'pow', challengeMaxNumber: 5000 });
    const challenge = (await (
      await fetch(`${url()}/api/sales/${id}/queue/challenge`, { headers: bearer(buyerToken('pow-a')) })
    ).json()) as Record<string, unknown>;
    expect(Object.keys(challenge).sort()).toEqual(['algorithm', 'challenge', 'maxnumber', 'salt', 'signature']);
    expect(challenge).toMatchObject({ algorithm: 'SHA-256', maxnumber: 5000 });

    await expectProblem(await join(url(), id, buyerToken('pow-a')), 403, 'CHALLENGE_REQUIRED');
    const payload = await solved(id, 'pow-a');
    const wrong = JSON.parse(Buffer.from(payload, 'base64').toString()) as { number: number };
    wrong.number += 1;
    await expectProblem(
      await join(url(), id, buyerToken('pow-a'), { solution: Buffer.from(JSON.stringify(wrong)).toString('base64') }),
      403,
      'CHALLENGE_REQUIRED',
    );
    // Bound to its buyer: another account cannot use it.
    await expectProblem(await join(url(), id, buyerToken('pow-b'), { solution: payload }), 403, 'CHALLENGE_REQUIRED');
    await expectProblem(await join(url(), id, buyerToken('pow-c'), { solution: 'not an ALTCHA payload' }), 403, 'CHALLENGE_REQUIRED');
    expect(await queued(id)).toEqual([]);

    // A buyer joins twice a second at most (QUEUE_JOINS_PER_SECOND): refusals count too.
    await pause(1100);
    expect((await join(url(), id, buyerToken('pow-a'), { solution: payload })).status).toBe(200);
    expect(await queued(id)).toEqual(['pow-a']);
    // Taken once: remembered in Redis until its challenge expires.
    expect(await system.ctx.redis.zcard(saleKeys(system.ctx.config.REDIS_PREFIX, id).pow)).toBe(1);
  });

  it("challenge auto: the base difficulty while joins keep to the door's pace; raised (to 100x) while a crowd joins faster than it admits, and back down once the joins stop", async () => {
    // One admission a hundred seconds: any crowd outpaces it, however slow this machine joins.
    const { id } = await sale({ stock: 5, startsIn: 120_000, challenge: 'auto', challengeMaxNumber: 1000, admitPerSecond: 0.01 });
    const challengeOf = async (userId: string) => {
      const res = await fetch(`${url()}/api/sales/${id}/queue/challenge`, { headers: bearer(buyerToken(userId)) });
      expect(res.status).toBe(200);
      return (await res.json()) as DoorChallenge;
    };
    expect((await challengeOf('auto-first')).maxnumber).toBe(1000);

    // A crowd of 40 accounts joins over about three seconds, each with the solution of its own challenge
    // (the door judges the join rate over spans of a second or more).
    let joinedCount = 0;
    let raised = 0;
    for (let i = 0; i < 40; i += 1) {
      await pause(75);
      const challenge = await challengeOf(`auto-${i}`);
      raised = Math.max(raised, challenge.maxnumber);
      expect((await join(url(), id, buyerToken(`auto-${i}`), { solution: solveDoorChallenge(challenge).solution })).status).toBe(200);
      joinedCount += 1;
    }
    expect(joinedCount).toBe(40);
    // Raised within the crowd, at most 100x.
    const during = await challengeOf('auto-late');
    expect(Math.max(raised, during.maxnumber)).toBe(100_000);
    // A harder challenge still joins once solved.
    expect((await join(url(), id, buyerToken('auto-late'), { solution: solveDoorChallenge(during).solution })).status).toBe(200);

    // Joins stopped: the rate the door sees decays (halved each second) and the base comes back.
    let asked = 0;
    const calm = await until(
      async () => {
        await pause(250);
        return challengeOf(`auto-calm-${asked++}`);
      },
      (challenge) => challenge.maxnumber <= 2000,
      60_000,
    );
    expect(calm.maxnumber).toBeGreaterThanOrEqual(1000);
    expect((await queued(id)).length).toBe(41);
  });

  it('400 INVALID_REQUEST for a join body that is not { solution: string }', async () => {
    const { id } = await sale({ stock: 5, startsIn: 60_000 });
    await expectProblem(await join(url(), id, buyerToken('body-a'), { solution: 42 }), 400, 'INVALID_REQUEST');
    await expectProblem(await join(url(), id, buyerToken('body-a'), { other: 'x' }), 400, 'INVALID_REQUEST');
  });
});

describe('the shadow queue', () => {
  it('a token the shop flags is answered exactly like a waiting buyer, with a place that moves, and is never admitted while everyone else is; counted', async () => {
    const before = sampleOf(await scrape(system.gateways[0]!), 'flashsale_door_shadow_joins_total{reason="flagged"}') ?? 0;
    const { id } = await sale({ stock: 20, admitPerSecond: 50, admissionTtlSeconds: 600, startsIn: 1500 });
    const honest = Array.from({ length: 6 }, (_, i) => doorBuyer(url(), id, `honest-${i}`));
    for (const b of honest) expect((await b.join()).status).toBe(200);
    const flaggedToken = buyerToken('farm-1', { claims: { flagged: true } });
    const joined = await join(url(), id, flaggedToken);
    const body = (await joined.json()) as { state: string; ticket: string };
    // The same answer a waiting buyer gets before the start: its fields, its headers, a ticket of the same form.
    expect(joined.status).toBe(200);
    expect(joined.headers.get('retry-after')).not.toBeNull();
    expect(body).toMatchObject({
      state: 'waiting',
      position: null,
      ticket: expect.stringMatching(/^q2\.\d+\.[\w-]+\.\d+\.-\.\d+\.[\w-]+$/),
    });

    for (const b of honest) await b.waitFor('admitted');
    let ticket = body.ticket;
    const told: unknown[] = [];
    for (let i = 0; i < 5; i += 1) {
      const res = await fetch(`${url()}/api/sales/${id}/queue`, { headers: { ...bearer(flaggedToken), 'queue-ticket': ticket } });
      const answer = (await res.json()) as { state: string; position: number; ticket: string };
      told.push(answer);
      ticket = answer.ticket;
      expect(answer).toMatchObject({ state: 'waiting', position: expect.any(Number) });
    }
    expect(told.every((t) => (t as { position: number }).position >= 1)).toBe(true);
    expect((await fetch(`${url()}/api/sales/${id}/purchase`, { method: 'POST', headers: bearer(flaggedToken) })).status).toBe(403);
    expect(await queued(id)).not.toContain('farm-1');
    await until(
      () => scrape(system.gateways[0]!),
      (text) => (sampleOf(text, 'flashsale_door_shadow_joins_total{reason="flagged"}') ?? 0) === before + 1,
      10_000,
    );
  });

  it('an account whose solutions are refused again and again is set aside: its third strike and every join after, its own good solution too, are shadow answers', async () => {
    const before = sampleOf(await scrape(system.gateways[0]!), 'flashsale_door_shadow_joins_total{reason="challenge"}') ?? 0;
    const { id } = await sale({ stock: 5, startsIn: 60_000, challenge: 'pow', challengeMaxNumber: 2000 });
    await expectProblem(await join(url(), id, buyerToken('striker')), 403, 'CHALLENGE_REQUIRED');
    await expectProblem(await join(url(), id, buyerToken('striker'), { solution: 'bad' }), 403, 'CHALLENGE_REQUIRED');
    await pause(1100);
    const third = await join(url(), id, buyerToken('striker'), { solution: 'bad again' });
    expect(third.status).toBe(200);
    expect(await third.json()).toMatchObject({ state: 'waiting' });
    await pause(1100);
    const good = await join(url(), id, buyerToken('striker'), { solution: await solved(id, 'striker') });
    expect(await good.json()).toMatchObject({ state: 'waiting' });
    expect(await queued(id)).toEqual([]);
    expect(sampleOf(await scrape(system.gateways[0]!), 'flashsale_door_shadow_joins_total{reason="challenge"}')).toBe(before + 2);
  });
});
