import { SignJWT } from 'jose';
import { DEV_AUTH_SECRET } from '@flashsale/config';

/** A buyer token as a real identity provider would issue it: HS256, `sub`, `exp`. */
export function buyerToken(userId: string, { secret = DEV_AUTH_SECRET, expiresIn = '10m' }: { secret?: string; expiresIn?: string | number } = {}): Promise<string> {
  return new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject(userId).setIssuedAt().setExpirationTime(expiresIn).sign(new TextEncoder().encode(secret));
}
