import { describe, expect, it } from 'vitest';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { DEV_AUTH_SECRET } from '@flashsale/config';
import { buyerToken, signBuyerTokens } from './tokens.ts';

const key = (secret: string) => new TextEncoder().encode(secret);

describe('buyerToken', () => {
  it('signs a token jose verifies: HS256, the buyer as sub, exp an hour after iat', async () => {
    const token = buyerToken('ann');

    const { payload, protectedHeader } = await jwtVerify(token, key(DEV_AUTH_SECRET), { algorithms: ['HS256'] });
    expect(protectedHeader).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toEqual({ sub: 'ann', iat: expect.any(Number), exp: payload.iat! + 3600 });
    expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(5);
  });

  it('signs with the secret given, which jose then requires', async () => {
    const secret = 'another-secret-of-at-least-32-characters';
    const token = buyerToken('ann', { secret });

    await expect(jwtVerify(token, key(secret))).resolves.toMatchObject({ payload: { sub: 'ann' } });
    await expect(jwtVerify(token, key(DEV_AUTH_SECRET))).rejects.toThrow('signature verification failed');
  });

  it('signs a token already expired when its ttl is negative', async () => {
    await expect(jwtVerify(buyerToken('ann', { ttlSeconds: -60 }), key(DEV_AUTH_SECRET))).rejects.toThrow(
      '"exp" claim timestamp check failed',
    );
  });

  it('keeps a buyer id that is not ASCII exactly', async () => {
    const { payload } = await jwtVerify(buyerToken('Zoë 🛒'), key(DEV_AUTH_SECRET));

    expect(payload.sub).toBe('Zoë 🛒');
  });
});

describe('signBuyerTokens', () => {
  it('signs one token per buyer, in order, as buyerToken does', async () => {
    const tokens = signBuyerTokens(['ann', 'bob'], { ttlSeconds: 60 });

    expect(tokens.map((token) => decodeProtectedHeader(token).alg)).toEqual(['HS256', 'HS256']);
    const subjects = await Promise.all(tokens.map(async (token) => (await jwtVerify(token, key(DEV_AUTH_SECRET))).payload.sub));
    expect(subjects).toEqual(['ann', 'bob']);
  });
});
