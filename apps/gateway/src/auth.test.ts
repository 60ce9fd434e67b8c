import { describe, expect, it } from 'vitest';
import { SignJWT, jwtVerify } from 'jose';
import { DEV_AUTH_SECRET } from '@flashsale/config';
import type { SaleRecord } from '@flashsale/order-store';
import { createLiveSale, type TestContext } from '../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { expectProblem } from '../../../test/support/http.ts';
import { ordersOfSale, snapshotSale } from '../../../test/support/sale-snapshot.ts';
import { AppError } from '@flashsale/domain';
import { createAdminCheck, createBuyerAuthenticator } from './auth.ts';

let ctx: TestContext;
let gateway: TestGateway;
let sale: SaleRecord;
gatewayPerFile(async (started, server) => {
  ctx = started;
  gateway = server;
  sale = await createLiveSale(ctx, { stock: 10 });
});

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const inTenMinutes = () => Math.floor(Date.now() / 1000) + 600;
const devKey = new TextEncoder().encode(DEV_AUTH_SECRET);

/** Authorization headers a buyer must not get through with, and the detail each is refused with. */
const refusedCredentials: [string, () => Promise<string | undefined>, string][] = [
  ['no Authorization header', async () => undefined, 'an Authorization: Bearer token is required'],
  [
    'a scheme other than Bearer',
    async () => `Basic ${Buffer.from('buyer:pw').toString('base64')}`,
    'an Authorization: Bearer token is required',
  ],
  ['an empty bearer token', async () => 'Bearer ', 'an Authorization: Bearer token is required'],
  ['a token that is not a JWT', async () => 'Bearer not-a-jwt', 'the token is not valid'],
  [
    'a token signed with another secret',
    async () => `Bearer ${buyerToken('mallory', { secret: 'another-secret-of-at-least-32-characters' })}`,
    'the token is not valid',
  ],
  ['an expired token', async () => `Bearer ${buyerToken('mallory', { ttlSeconds: -60 })}`, 'the token has expired'],
  [
    'an unsigned token (alg none)',
    async () => `Bearer ${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ sub: 'mallory', exp: inTenMinutes() })}.`,
    'the token is not valid',
  ],
  [
    'a token signed with the right secret but HS512',
    async () =>
      `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS512' }).setSubject('mallory').setExpirationTime('10m').sign(devKey)}`,
    'the token is not valid',
  ],
  [
    'a token without exp',
    async () =>
      `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject('mallory').setIssuedAt().sign(devKey)}`,
    'the token is not valid',
  ],
  [
    'a token without sub',
    async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setExpirationTime('10m').sign(devKey)}`,
    'the token is not valid',
  ],
  ['a token whose sub is empty', async () => `Bearer ${buyerToken('')}`, 'the token subject must be a buyer id of 1 to 64 characters'],
  [
    'a token whose sub is longer than 64 characters',
    async () => `Bearer ${buyerToken('b'.repeat(65))}`,
    'the token subject must be a buyer id of 1 to 64 characters',
  ],
  [
    'a token whose sub is not a string',
    async () =>
      `Bearer ${await new SignJWT({ sub: 42 } as unknown as Record<string, unknown>).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('10m').sign(devKey)}`,
    'the token subject must be a buyer id of 1 to 64 characters',
  ],
];

describe('buyer tokens on the purchase endpoint', () => {
  it.each(refusedCredentials)('refuses %s with 401 UNAUTHORIZED and writes nothing', async (_, authorization, detail) => {
    const header = await authorization();
    const before = await snapshotSale(ctx, sale.id);

    const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: header === undefined ? {} : { authorization: header },
    });

    await expectProblem(res, 401, 'UNAUTHORIZED', detail);
    expect(await snapshotSale(ctx, sale.id)).toEqual(before);
    expect(before.streamLength).toBe(0);
    expect(await ordersOfSale(ctx, sale.id)).toBe(0);
  });

  it('accepts a buyer id of exactly 64 characters and records the purchase under it', async () => {
    const buyer = 'b'.repeat(64);

    const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
      method: 'POST',
      headers: { authorization: `Bearer ${buyerToken(buyer)}` },
    });

    expect(res.status).toBe(202);
    const { reservationId } = (await res.json()) as { reservationId: string };
    expect((await snapshotSale(ctx, sale.id)).buyers).toEqual({
      [buyer]: expect.stringMatching(new RegExp(`^${reservationId}\\|1\\|\\d+$`)),
    });
  });
});

/** What an authenticator threw: the status, code and detail a client would see, or 'accepted'. */
function verdictOf(check: () => unknown): { status: number; code: string; detail: string } | 'accepted' {
  try {
    check();
    return 'accepted';
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { status: error.status, code: error.code, detail: error.message };
  }
}

const EMOJI = '\u{1F600}';
const LONE_SURROGATES = ['\uD800', '\uDC00', 'ann\uD83D', '\uDE00ann', '\uDE00\uD83D'];

describe('createBuyerAuthenticator', () => {
  const authenticate = createBuyerAuthenticator(DEV_AUTH_SECRET);

  it('counts the buyer id in characters (code points): 64 emoji, 128 UTF-16 units, are accepted', async () => {
    const buyer = EMOJI.repeat(64);
    expect(buyer.length).toBe(128);

    expect(authenticate(`Bearer ${buyerToken(buyer)}`)).toBe(buyer);
  });

  it('refuses a buyer id of 65 characters, emoji or not', async () => {
    const refusal = { status: 401, code: 'UNAUTHORIZED', detail: 'the token subject must be a buyer id of 1 to 64 characters' };

    for (const buyer of [EMOJI.repeat(65), `${EMOJI.repeat(64)}a`, 'b'.repeat(65), EMOJI.repeat(33) + 'b'.repeat(32)]) {
      const token = buyerToken(buyer);
      expect(verdictOf(() => authenticate(`Bearer ${token}`))).toEqual(refusal);
    }
  });

  it.each(LONE_SURROGATES)('refuses the ill-formed buyer id %j (a lone surrogate has no UTF-8 form)', async (buyer) => {
    const token = buyerToken(buyer);

    expect(verdictOf(() => authenticate(`Bearer ${token}`))).toEqual({
      status: 401,
      code: 'UNAUTHORIZED',
      detail: 'the token subject is not well-formed Unicode',
    });
  });

  it('accepts a well-formed buyer id made of surrogate pairs and other scripts', async () => {
    const buyer = `\u00e9l\u00e8ve-\u5c71\u7530-${EMOJI}-\u{10FFFF}`;

    expect(authenticate(`Bearer ${buyerToken(buyer)}`)).toBe(buyer);
  });

  it.each(['bearer', 'BEARER', 'bEaReR'])('accepts the scheme spelt %j: it is case-insensitive in HTTP', async (scheme) => {
    expect(authenticate(`${scheme} ${buyerToken('ann')}`)).toBe('ann');
  });

  it.each(['Bearer', 'Bearerx', 'Token'])('still refuses a token after %j with no space, or under another scheme', async (scheme) => {
    const token = buyerToken('ann');
    const header = scheme === 'Token' ? `Token ${token}` : `${scheme}${token}`;

    expect(verdictOf(() => authenticate(header))).toEqual({
      status: 401,
      code: 'UNAUTHORIZED',
      detail: 'an Authorization: Bearer token is required',
    });
  });
});

describe('clock tolerance (AUTH_CLOCK_TOLERANCE_SECONDS)', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const signed = (claims: { exp: number; nbf?: number; iat?: number }) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject('ann').sign(devKey);
  /** jose's verdict with the same tolerance: the rules this verifier promises to keep. */
  const joseVerdict = async (token: string, tolerance: number) =>
    jwtVerify(token, devKey, { algorithms: ['HS256'], clockTolerance: tolerance }).then(
      () => 'accepted',
      () => 'refused',
    );
  const ownVerdict = (token: string, tolerance: number) => {
    const verdict = verdictOf(() => createBuyerAuthenticator(DEV_AUTH_SECRET, tolerance)(`Bearer ${token}`));
    return verdict === 'accepted' ? verdict : 'refused';
  };

  it.each<[string, { exp: number; nbf?: number; iat?: number }, number, 'accepted' | 'refused']>([
    ['expired 3 s ago', { exp: -3 }, 5, 'accepted'],
    ['expired 3 s ago, no tolerance', { exp: -3 }, 0, 'refused'],
    ['expired 30 s ago', { exp: -30 }, 5, 'refused'],
    ['not valid before 3 s from now', { exp: 600, nbf: 3 }, 5, 'accepted'],
    ['not valid before 3 s from now, no tolerance', { exp: 600, nbf: 3 }, 0, 'refused'],
    ['not valid before 60 s from now', { exp: 600, nbf: 60 }, 5, 'refused'],
    ['issued 60 s in the future', { exp: 600, iat: 60 }, 5, 'accepted'],
  ])('a token %s (tolerance 5 s unless said) is judged as jose judges it', async (_, offsets, tolerance, expected) => {
    const claims = {
      exp: now() + offsets.exp,
      ...(offsets.nbf === undefined ? {} : { nbf: now() + offsets.nbf }),
      ...(offsets.iat === undefined ? {} : { iat: now() + offsets.iat }),
    };
    const token = await signed(claims);

    expect(ownVerdict(token, tolerance)).toBe(expected);
    expect(await joseVerdict(token, tolerance)).toBe(expected);
  });
});

describe('createAdminCheck', () => {
  const checkAdmin = createAdminCheck('an-admin-token-of-some-length');

  it.each(['Bearer', 'bearer', 'BEARER'])('accepts the admin token after the scheme spelt %j', (scheme) => {
    expect(verdictOf(() => checkAdmin(`${scheme} an-admin-token-of-some-length`))).toBe('accepted');
  });

  it('refuses another token, whatever the scheme is spelt', () => {
    expect(verdictOf(() => checkAdmin('bearer an-admin-token-of-some-lengtH'))).toEqual({
      status: 401,
      code: 'UNAUTHORIZED',
      detail: 'the admin token is not valid',
    });
  });
});

describe('buyer ids on the purchase endpoint', () => {
  it('refuses two buyers whose ids are lone surrogates with 401, changing nothing in Redis (in UTF-8 both would be U+FFFD, one buyer)', async () => {
    const own = await createLiveSale(ctx, { stock: 10 });
    const before = await snapshotSale(ctx, own.id);

    const responses = [];
    for (const buyer of ['\uD800', '\uDC00']) {
      responses.push(
        await fetch(`${gateway.url}/api/sales/${own.id}/purchase`, {
          method: 'POST',
          headers: { authorization: `Bearer ${buyerToken(buyer)}` },
        }),
      );
    }

    for (const res of responses) await expectProblem(res, 401, 'UNAUTHORIZED', 'the token subject is not well-formed Unicode');
    expect(await snapshotSale(ctx, own.id)).toEqual(before);
    expect(before.buyers).toEqual({});
    expect(await ordersOfSale(ctx, own.id)).toBe(0);
  });

  it('records a buyer id of 64 emoji in Redis, and MySQL holds it in orders.user_id', async () => {
    const own = await createLiveSale(ctx, { stock: 10 });
    const buyer = EMOJI.repeat(64);

    const res = await fetch(`${gateway.url}/api/sales/${own.id}/purchase`, {
      method: 'POST',
      headers: { authorization: `Bearer ${buyerToken(buyer)}` },
    });

    expect(res.status).toBe(202);
    const { reservationId } = (await res.json()) as { reservationId: string };
    expect((await snapshotSale(ctx, own.id)).buyers).toEqual({
      [buyer]: expect.stringMatching(new RegExp(`^${reservationId}\\|1\\|\\d+$`)),
    });
    // What the worker will write: VARCHAR(64) in utf8mb4 counts code points, so the id fits unchanged.
    await ctx.prisma.order.create({
      data: { reservationId, saleId: own.id, userId: buyer, quantity: 1, reservedAt: new Date(), payBy: new Date(Date.now() + 900_000) },
    });
    expect((await ctx.prisma.order.findUniqueOrThrow({ where: { reservationId } })).userId).toBe(buyer);
  });

  it('accepts a lowercase bearer scheme on the purchase endpoint', async () => {
    const own = await createLiveSale(ctx, { stock: 10 });

    const res = await fetch(`${gateway.url}/api/sales/${own.id}/purchase`, {
      method: 'POST',
      headers: { authorization: `bearer ${buyerToken('lowercase-scheme')}` },
    });

    expect(res.status).toBe(202);
    expect(Object.keys((await snapshotSale(ctx, own.id)).buyers)).toEqual(['lowercase-scheme']);
  });
});
