import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { AppError } from '@flashsale/domain';

// The scheme is case-insensitive in HTTP (RFC 9110 11.1): `bearer` and `BEARER` are the same scheme.
const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]+)$/i;
const MAX_BUYER_ID = 64;
const BASE64URL = /^[A-Za-z0-9_-]*$/;
/**
 * The Authorization line of an HS256 JWT as issuers write it: the scheme, one space, three base64url
 * segments, a 43-character signature (32 bytes). One test, no match array: a line it passes needs none of
 * the checks of its shape below; one it fails goes through them for its exact refusal.
 */
const JWS_LINE = /^Bearer [A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/i;
const BEARER_PREFIX = 'Bearer '.length;

function bearerToken(header: string | undefined): string {
  const match = header ? BEARER.exec(header) : null;
  if (!match) throw new AppError('UNAUTHORIZED', { because: 'no_bearer' });
  return match[1]!;
}

const notValid = () => new AppError('UNAUTHORIZED', { because: 'bad_token' });

/** Decoded segments go through this buffer, not a new one each (the process is one thread: no call overlaps another). */
const scratch = Buffer.allocUnsafe(2048);

/** A segment's bytes as UTF-8 text; `segment` is base64url already checked. */
function base64urlText(segment: string): string {
  // Four characters decode to three bytes at most: a segment longer than the buffer holds gets its own.
  if (segment.length > (scratch.length / 3) * 4) return Buffer.from(segment, 'base64url').toString('utf8');
  return scratch.toString('utf8', 0, scratch.write(segment, 'base64url'));
}

/** The JSON object a base64url segment holds, or null; `checked`: the segment's characters are known to be base64url. */
function decodeJsonObject(segment: string, checked = false): Record<string, unknown> | null {
  if (!checked && !BASE64URL.test(segment)) return null;
  try {
    const value: unknown = JSON.parse(base64urlText(segment));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Verifies buyer tokens: HS256 only (a token claiming `none` or any other algorithm is refused), `exp`
 * required, `sub` the buyer id of 1 to 64 characters. The buyer id comes from here, never the body.
 *
 * A character is a code point, as MySQL counts them for orders.user_id (VARCHAR(64), utf8mb4): a sub of
 * 64 emoji is 128 UTF-16 units but fits the column. A sub with a lone surrogate is refused: it has no
 * UTF-8 form, so Redis would get U+FFFD in its place, and two different ids (`\uD800`, `\uDC00`) would be
 * one buyer there.
 *
 * Synchronous on purpose, with node:crypto's HMAC: this runs on every purchase, and the profile showed
 * jose's WebCrypto path (a promise per verification, key import checks, several object copies) as the
 * largest single cost of the hot path. The key is a KeyObject made once: handed a Buffer, createHmac
 * builds one per call, which measured 30 us against 6 us here. A token as issuers write it is checked
 * for its shape by one regular expression (JWS_LINE), its HMAC compared as base64url text and its claims
 * decoded into a buffer kept for it: 2.4 us a token against 3.2 for the step-by-step checks, a Buffer
 * digest and a decode of the signature (a loop over 200,000 bench tokens; CHANGELOG.md). Any other line
 * takes the steps, so each refusal keeps its reason. The rules are jose's, which the tests pin: the signature is
 * checked before any claim; an unknown `crit` header is refused; `exp`, `nbf` and `iat` must be numbers
 * when present; a token is expired from its `exp` second on; one whose `nbf` is in the future is refused.
 *
 * `clockToleranceSeconds` is jose's `clockTolerance`: the issuer's clock and this process's may differ
 * by that much, so a token is still taken until `exp` + tolerance and already from `nbf` - tolerance.
 * (`iat` is only checked for its type: like jose without `maxTokenAge`, a token issued "in the future"
 * by an issuer whose clock runs ahead is not refused for it.)
 */
export function createBuyerAuthenticator(secret: string, clockToleranceSeconds = 0): (authorization: string | undefined) => string {
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  // Every token of an issuer carries the same header: its verdict is kept after the first decode.
  const acceptedHeaders = new Set<string>();
  return (authorization) => {
    // The common line is known well-formed from one test; any other is checked step by step.
    const shaped = authorization !== undefined && JWS_LINE.test(authorization);
    const token = shaped ? authorization.slice(BEARER_PREFIX) : bearerToken(authorization);
    const firstDot = token.indexOf('.');
    const secondDot = token.indexOf('.', firstDot + 1);
    if (!shaped) {
      if (firstDot < 0 || secondDot < 0 || token.indexOf('.', secondDot + 1) >= 0) throw notValid();
      if (!BASE64URL.test(token.slice(secondDot + 1))) throw notValid();
    }
    const headerSegment = token.slice(0, firstDot);
    if (!acceptedHeaders.has(headerSegment)) {
      const header = decodeJsonObject(headerSegment);
      if (!header || header.alg !== 'HS256' || header.crit !== undefined || header.b64 !== undefined) throw notValid();
      if (acceptedHeaders.size < 16) acceptedHeaders.add(headerSegment);
    }
    const expected = createHmac('sha256', key).update(token.slice(0, secondDot)).digest('base64url');
    if (!sameSignature(expected, token, secondDot + 1)) throw notValid();

    const claims = decodeJsonObject(token.slice(firstDot + 1, secondDot), shaped);
    if (!claims || !Object.hasOwn(claims, 'exp') || !Object.hasOwn(claims, 'sub')) throw notValid();
    const { exp, nbf, iat, sub } = claims;
    const now = Math.floor(Date.now() / 1000);
    if (iat !== undefined && typeof iat !== 'number') throw notValid();
    if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now + clockToleranceSeconds)) throw notValid();
    if (typeof exp !== 'number') throw notValid();
    if (exp <= now - clockToleranceSeconds) throw new AppError('UNAUTHORIZED', { because: 'token_expired' });
    if (typeof sub !== 'string' || sub.length < 1 || !atMostCodePoints(sub, MAX_BUYER_ID)) {
      throw new AppError('UNAUTHORIZED', { because: 'bad_subject', maxLength: MAX_BUYER_ID });
    }
    if (!sub.isWellFormed()) throw new AppError('UNAUTHORIZED', { because: 'subject_not_unicode' });
    return sub;
  };
}

/**
 * Whether the signature starting at `from` in `token` is the HMAC `expected` (base64url), in time that
 * does not depend on where they differ. The HMAC is compared as text first (a digest is dearer to get as
 * bytes, and a decode of the signature more still); a signature spelt otherwise (its last character's
 * unused bits set) is compared as bytes, as jose would, so it is taken too.
 */
function sameSignature(expected: string, token: string, from: number): boolean {
  if (token.length - from === expected.length) {
    let difference = 0;
    for (let i = 0; i < expected.length; i += 1) difference |= expected.charCodeAt(i) ^ token.charCodeAt(from + i);
    if (difference === 0) return true;
  }
  const given = Buffer.from(token.slice(from), 'base64url');
  const wanted = Buffer.from(expected, 'base64url');
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

/**
 * The claims of a buyer token the authenticator has just accepted (its signature and times checked): read
 * only for a claim a sale asks (requireClaim), so the authenticator's hot path decodes nothing more.
 */
export function tokenClaims(authorization: string | undefined): Record<string, unknown> {
  const token = bearerToken(authorization);
  const firstDot = token.indexOf('.');
  return decodeJsonObject(token.slice(firstDot + 1, token.indexOf('.', firstDot + 1))) ?? {};
}

/** Whether a string has at most `max` code points; a lone surrogate counts as one. */
function atMostCodePoints(value: string, max: number): boolean {
  // Each code point is one or two UTF-16 units: only lengths between max and 2 * max need counting.
  if (value.length <= max) return true;
  if (value.length > 2 * max) return false;
  let count = 0;
  for (const _ of value) if (++count > max) return false;
  return true;
}

/** Checks the admin bearer token in constant time. */
export function createAdminCheck(adminToken: string): (authorization: string | undefined) => void {
  const expected = Buffer.from(adminToken);
  return (authorization) => {
    const given = Buffer.from(bearerToken(authorization));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new AppError('UNAUTHORIZED', { because: 'bad_admin_token' });
    }
  };
}
