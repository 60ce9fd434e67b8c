import { createHmac } from 'node:crypto';
import { DEV_AUTH_SECRET } from '@flashsale/config';

/**
 * Buyer tokens in bulk, signed synchronously (HS256, `sub`, `iat`, `exp`): the same tokens `buyerToken`
 * makes, at a few microseconds each, so a load run can give every request a buyer of its own.
 */
export function signBuyerTokens(userIds: string[], { secret = DEV_AUTH_SECRET, ttlSeconds = 3600 } = {}): string[] {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const iat = Math.floor(Date.now() / 1000);
  return userIds.map((sub) => {
    const input = `${header}.${Buffer.from(JSON.stringify({ sub, iat, exp: iat + ttlSeconds })).toString('base64url')}`;
    return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
  });
}
