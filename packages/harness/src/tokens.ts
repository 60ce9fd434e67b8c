import { createHmac, createSecretKey } from 'node:crypto';
import { DEV_AUTH_SECRET } from '@flashsale/config';

export interface BuyerTokenOptions {
  /** The HS256 key, default the development AUTH_SECRET every process uses without one set. */
  secret?: string;
  /** Seconds from now to `exp`, default 3600; negative for a token that has already expired. */
  ttlSeconds?: number;
  /** More claims, as a shop's identity system sets them (a sale's requireClaim, say). */
  claims?: Record<string, unknown>;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

/**
 * Buyer tokens as a real identity provider issues them: HS256, `sub`, `iat`, `exp`. The one signer of
 * the tests, the harness and the load and bench runners (the k6 scripts sign in k6's own runtime).
 * Signed synchronously with node:crypto, a few microseconds each, so a load run can give every request
 * a buyer of its own (jose takes about 70); `tokens.test.ts` proves jose verifies them.
 */
export function signBuyerTokens(
  userIds: readonly string[],
  { secret = DEV_AUTH_SECRET, ttlSeconds = 3600, claims = {} }: BuyerTokenOptions = {},
): string[] {
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  const iat = Math.floor(Date.now() / 1000);
  return userIds.map((sub) => {
    const input = `${HEADER}.${Buffer.from(JSON.stringify({ ...claims, sub, iat, exp: iat + ttlSeconds })).toString('base64url')}`;
    return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
  });
}

/** One buyer's token (see signBuyerTokens). */
export function buyerToken(userId: string, options: BuyerTokenOptions = {}): string {
  return signBuyerTokens([userId], options)[0]!;
}
