import { timingSafeEqual } from 'node:crypto';
import { errors as joseErrors, jwtVerify } from 'jose';
import { AppError } from '@flashsale/domain';

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]+)$/;

function bearerToken(header: string | undefined): string {
  const match = header ? BEARER.exec(header) : null;
  if (!match) throw new AppError('UNAUTHORIZED', 'an Authorization: Bearer token is required');
  return match[1]!;
}

/**
 * Verifies buyer tokens: HS256 only (a token claiming `none` or any other algorithm is refused), `exp`
 * required, `sub` the buyer id of 1 to 64 characters. The buyer id comes from here, never the body.
 */
export function createBuyerAuthenticator(secret: string): (authorization: string | undefined) => Promise<string> {
  const key = new TextEncoder().encode(secret);
  return async (authorization) => {
    const token = bearerToken(authorization);
    try {
      const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'], requiredClaims: ['exp', 'sub'] });
      const sub = payload.sub;
      if (typeof sub !== 'string' || sub.length < 1 || sub.length > 64) {
        throw new AppError('UNAUTHORIZED', 'the token subject must be a buyer id of 1 to 64 characters');
      }
      return sub;
    } catch (error) {
      if (error instanceof AppError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw new AppError('UNAUTHORIZED', 'the token has expired');
      throw new AppError('UNAUTHORIZED', 'the token is not valid');
    }
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
