import { describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { DEV_AUTH_SECRET } from '@flashsale/config';
import type { SaleRecord } from '@flashsale/order-store';
import { createLiveSale, type TestContext } from '../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../test/support/gateway.ts';
import { buyerToken } from '../../../test/support/tokens.ts';
import { expectProblem } from '../../../test/support/http.ts';
import { ordersOfSale, snapshotSale } from '../../../test/support/sale-snapshot.ts';

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
  ['a scheme other than Bearer', async () => `Basic ${Buffer.from('buyer:pw').toString('base64')}`, 'an Authorization: Bearer token is required'],
  ['an empty bearer token', async () => 'Bearer ', 'an Authorization: Bearer token is required'],
  ['a token that is not a JWT', async () => 'Bearer not-a-jwt', 'the token is not valid'],
  [
    'a token signed with another secret',
    async () => `Bearer ${await buyerToken('mallory', { secret: 'another-secret-of-at-least-32-characters' })}`,
    'the token is not valid',
  ],
  ['an expired token', async () => `Bearer ${await buyerToken('mallory', { expiresIn: Math.floor(Date.now() / 1000) - 60 })}`, 'the token has expired'],
  [
    'an unsigned token (alg none)',
    async () => `Bearer ${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ sub: 'mallory', exp: inTenMinutes() })}.`,
    'the token is not valid',
  ],
  [
    'a token signed with the right secret but HS512',
    async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS512' }).setSubject('mallory').setExpirationTime('10m').sign(devKey)}`,
    'the token is not valid',
  ],
  [
    'a token without exp',
    async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject('mallory').setIssuedAt().sign(devKey)}`,
    'the token is not valid',
  ],
  [
    'a token without sub',
    async () => `Bearer ${await new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setExpirationTime('10m').sign(devKey)}`,
    'the token is not valid',
  ],
  ['a token whose sub is empty', async () => `Bearer ${await buyerToken('')}`, 'the token subject must be a buyer id of 1 to 64 characters'],
  ['a token whose sub is longer than 64 characters', async () => `Bearer ${await buyerToken('b'.repeat(65))}`, 'the token subject must be a buyer id of 1 to 64 characters'],
  [
    'a token whose sub is not a string',
    async () => `Bearer ${await new SignJWT({ sub: 42 } as unknown as Record<string, unknown>).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('10m').sign(devKey)}`,
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

    const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, { method: 'POST', headers: { authorization: `Bearer ${await buyerToken(buyer)}` } });

    expect(res.status).toBe(202);
    const { reservationId } = (await res.json()) as { reservationId: string };
    expect((await snapshotSale(ctx, sale.id)).buyers).toEqual({ [buyer]: `${reservationId}|1` });
  });
});
