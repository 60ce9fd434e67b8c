import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { solveChallenge } from 'altcha-lib/v1';
import { buyerToken, spawnGateway, type AppProcess } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { startSystem, type System } from '../support/system.ts';
import { createQueuedSale, type QueuedSaleOptions } from '../support/door.ts';
import { bearer } from '../support/http.ts';

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
  return Buffer.from(JSON.stringify({ algorithm: challenge.algorithm, challenge: challenge.challenge, number: solution!.number, salt: challenge.salt, signature: challenge.signature })).toString('base64');
}

describe('budgets and the cap', () => {
  it('joins past the per-address budget are 429 RATE_LIMITED with Retry-After, and never reach Redis; a second buyer budget refuses one account joining again and again', async () => {
    const { id } = await sale({ stock: 5, startsIn: 60_000 });
    const answers = [];
    for (let i = 0; i < 12; i += 1) answers.push(await join(budgeted.url, id, buyerToken(`flood-${i}`)));
    const refused = answers.filter((res) => res.status === 429);
    // 5 a second from this address: at least 5 of 12 refused, whichever second boundaries they straddle.
    expect(answers.filter((res) => res.status === 200).length).toBeLessThanOrEqual(10);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    for (const res of refused) await expectProblem(res, 429, 'RATE_LIMITED');
    expect(refused[0]!.headers.get('retry-after')).toBe('1');
    expect((await queued(id)).length).toBe(12 - refused.length);

    // One account: QUEUE_JOINS_PER_SECOND (2) a second, whatever address.
    const again = [];
    for (let i = 0; i < 4; i += 1) again.push((await join(url(), id, buyerToken('one-account'))).status);
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
        admission: { mode: 'queue', admissionTtlSeconds: 30, showUpSeconds: 60, challenge: 'hard', challengeMaxNumber: 10, requireClaim: 'exp', maxQueueSize: 0 },
      }),
    });
    const problem = await expectProblem(res, 400, 'INVALID_REQUEST');
    const errors = (problem.errors as string[]).join('\n');
    for (const field of ['admission.challenge', 'admission.challengeMaxNumber', 'admission.requireClaim', 'admission.maxQueueSize']) expect(errors).toContain(field);
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
    const challenge = (await (await fetch(`${url()}/api/sales/${id}/queue/challenge`, { headers: bearer(buyerToken('pow-a')) })).json()) as Record<string, unknown>;
    expect(Object.keys(challenge).sort()).toEqual(['algorithm', 'challenge', 'maxnumber', 'salt', 'signature']);
    expect(challenge).toMatchObject({ algorithm: 'SHA-256', maxnumber: 5000 });

    await expectProblem(await join(url(), id, buyerToken('pow-a')), 403, 'CHALLENGE_REQUIRED');
    const payload = await solved(id, 'pow-a');
    const wrong = JSON.parse(Buffer.from(payload, 'base64').toString()) as { number: number };
    wrong.number += 1;
    await expectProblem(await join(url(), id, buyerToken('pow-a'), { solution: Buffer.from(JSON.stringify(wrong)).toString('base64') }), 403, 'CHALLENGE_REQUIRED');
    // Bound to its buyer: another account cannot use it.
    await expectProblem(await join(url(), id, buyerToken('pow-b'), { solution: payload }), 403, 'CHALLENGE_REQUIRED');
    // A buyer joins twice a second at most (QUEUE_JOINS_PER_SECOND): refusals count too.
    await pause(1100);
    await expectProblem(await join(url(), id, buyerToken('pow-a'), { solution: 'not an ALTCHA payload' }), 403, 'CHALLENGE_REQUIRED');
    expect(await queued(id)).toEqual([]);

    await pause(1100);
    expect((await join(url(), id, buyerToken('pow-a'), { solution: payload })).status).toBe(200);
    expect(await queued(id)).toEqual(['pow-a']);
    // Taken once: remembered in Redis until its challenge expires.
    expect(await system.ctx.redis.zcard(saleKeys(system.ctx.config.REDIS_PREFIX, id).pow)).toBe(1);
  });

  it('400 INVALID_REQUEST for a join body that is not { solution: string }', async () => {
    const { id } = await sale({ stock: 5, startsIn: 60_000 });
    await expectProblem(await join(url(), id, buyerToken('body-a'), { solution: 42 }), 400, 'INVALID_REQUEST');
    await expectProblem(await join(url(), id, buyerToken('body-a'), { other: 'x' }), 400, 'INVALID_REQUEST');
  });
});
