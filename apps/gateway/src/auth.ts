import { createSecretKey, timingSafeEqual } from 'node:crypto';
import { errors as joseErrors, jwtVerify } from 'jose';
import { AppError } from '@flashsale/domain';

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]+)$/;

function bearerToken(header: string | undefined): string {
  const match = header ? BEARER.exec(header) : null;
  if (!match) throw new AppError('UNAUTHORIZED', 'an Authorization: Bearer token is required');
  return match[1]!;
}

/**
 * Verifies buyer tokens with jose: HS256 only (a token claiming `none` or any other algorithm is
 * refused), `exp` required, `sub` the buyer id of 1 to 64 characters. The buyer id comes from here,
 * never the body. The key is a KeyObject made once, so jose does not import it on every purchase.
 */
export function createBuyerAuthenticator(secret: string): (authorization: string | undefined) => Promise<string> {
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  return async (authorization) => {
    const token = bearerToken(authorization);
    let sub: unknown;
    try {
      ({ payload: { sub } } = await jwtVerify(token, key, { algorithms: ['HS256'], requiredClaims: ['exp', 'sub'] }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new AppError('UNAUTHORIZED', 'the token has expired');
      throw new AppError('UNAUTHORIZED', 'the token is not valid');
    }
    if (typeof sub !== 'string' || sub.length < 1 || sub.length > 64) {
      throw new AppError('UNAUTHORIZED', 'the token subject must be a buyer id of 1 to 64 characters');
    }
    return sub;
  };
}

/** Checks the admin bearer token in constant time. */
export function createAdminCheck(adminToken: string): (authorization: string | undefined) => void {
  const expected = Buffer.from(adminToken);
  return (authorization) => {
    const given = Buffer.from(bearerToken(authorization));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new AppError('UNAUTHORIZED', 'the admin token is not valid');
    }
  };
}
