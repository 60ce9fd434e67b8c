import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppError } from '@flashsale/domain';
import { createBuyerAuthenticator } from './auth.ts';

// The HS256 verifier on its own, header and claims edge by edge; auth.test.ts covers the endpoints and
// checks the clock tolerance against jose.

const SECRET = 'the-verifier-table-secret-of-some-length';
/** This process's clock during these tests, in epoch seconds; half a second in, so seconds are floored. */
const NOW = 1_800_000_000;

beforeAll(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(NOW * 1000 + 500);
});
afterAll(() => {
  vi.useRealTimers();
});

/** A segment: an object JSON-encoded, or a string taken as the raw JSON text. */
const segment = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const signature = (input: string, secret = SECRET) => createHmac('sha256', secret).update(input).digest('base64url');

const HEADER = { alg: 'HS256', typ: 'JWT' };
const CLAIMS = { sub: 'ann', exp: NOW + 60 };

/** A token with the standard header and claims unless told otherwise, signed with SECRET unless told otherwise. */
function token({
  header = HEADER,
  claims = CLAIMS,
  secret = SECRET,
}: { header?: unknown; claims?: unknown; secret?: string } = {}): string {
  const input = `${segment(header)}.${segment(claims)}`;
  return `${input}.${signature(input, secret)}`;
}

const REQUIRED = 'an Authorization: Bearer token is required';
const NOT_VALID = 'the token is not valid';
const EXPIRED = 'the token has expired';
const BAD_SUBJECT = 'the token subject must be a buyer id of 1 to 64 characters';
const ILL_FORMED = 'the token subject is not well-formed Unicode';

/** The buyer id the authenticator returned, or the detail of its 401 UNAUTHORIZED. */
function verdictOf(
  authenticate: (authorization: string | undefined) => string,
  authorization: string | undefined,
): { buyer: string } | { refused: string } {
  try {
    return { buyer: authenticate(authorization) };
  } catch (error) {
    if (!(error instanceof AppError) || error.status !== 401 || error.code !== 'UNAUTHORIZED') throw error;
    return { refused: error.message };
  }
}

const valid = token();
const [validHeader, validClaims, validSignature] = valid.split('.') as [string, string, string];
const signedAs = (header: string, claims: string) => `${header}.${claims}.${signature(`${header}.${claims}`)}`;
const BASE64URL_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The digit with the same upper four bits (the last of 32 bytes' 43 digits carries only those) and other low ones. */
const otherSpelling = (digit: string) => BASE64URL_DIGITS[BASE64URL_DIGITS.indexOf(digit) ^ 1]!;

const CASES: [string, string | undefined, { buyer: string } | { refused: string }][] = [
  ['a well-formed token', `Bearer ${valid}`, { buyer: 'ann' }],
  // The header line
  ['no Authorization header', undefined, { refused: REQUIRED }],
  ['an empty header', '', { refused: REQUIRED }],
  ['the scheme alone', 'Bearer', { refused: REQUIRED }],
  ['two spaces after the scheme', `Bearer  ${valid}`, { refused: REQUIRED }],
  ['a space after the token', `Bearer ${valid} `, { refused: REQUIRED }],
  ['a character outside token68 in the token', `Bearer ${valid}!`, { refused: REQUIRED }],
  ['the Basic scheme', `Basic ${valid}`, { refused: REQUIRED }],
  // The token's shape
  ['two segments', `Bearer ${validHeader}.${validClaims}`, { refused: NOT_VALID }],
  ['four segments', `Bearer ${valid}.${validSignature}`, { refused: NOT_VALID }],
  ['an empty signature', `Bearer ${validHeader}.${validClaims}.`, { refused: NOT_VALID }],
  [
    'a signature in base64 rather than base64url',
    `Bearer ${validHeader}.${validClaims}.${Buffer.from(validSignature, 'base64url').toString('base64')}`,
    { refused: NOT_VALID },
  ],
  ['a signature one character short', `Bearer ${valid.slice(0, -1)}`, { refused: NOT_VALID }],
  ['a signature one character long', `Bearer ${valid}A`, { refused: NOT_VALID }],
  [
    'a signature made with another secret',
    `Bearer ${token({ secret: 'another-secret-of-at-least-32-characters' })}`,
    { refused: NOT_VALID },
  ],
  [
    "a signature whose last character's unused bits are set: the same 32 bytes, taken as jose takes it",
    `Bearer ${validHeader}.${validClaims}.${validSignature.slice(0, -1)}${otherSpelling(validSignature.at(-1)!)}`,
    { buyer: 'ann' },
  ],
  ['the scheme in lower case', `bearer ${valid}`, { buyer: 'ann' }],
  ['claims with base64 padding', `Bearer ${signedAs(validHeader, `${validClaims}=`)}`, { refused: NOT_VALID }],
  ['claims with a base64 character (+)', `Bearer ${signedAs(validHeader, `${validClaims.slice(0, -1)}+`)}`, { refused: NOT_VALID }],
  [
    'claims of over 3 KB (decoded into a buffer of their own)',
    `Bearer ${token({ claims: { ...CLAIMS, note: 'n'.repeat(3000) } })}`,
    { buyer: 'ann' },
  ],
  ['claims changed after signing', `Bearer ${validHeader}.${segment({ ...CLAIMS, sub: 'bob' })}.${validSignature}`, { refused: NOT_VALID }],
  // The header segment
  ['a header with base64 padding', `Bearer ${signedAs(`${validHeader}=`, validClaims)}`, { refused: NOT_VALID }],
  ['a header that is not JSON', `Bearer ${signedAs(segment('{alg:HS256}'), validClaims)}`, { refused: NOT_VALID }],
  ['a header that is a JSON array', `Bearer ${token({ header: ['HS256'] })}`, { refused: NOT_VALID }],
  ['a header that is JSON null', `Bearer ${token({ header: 'null' })}`, { refused: NOT_VALID }],
  ['a header without alg', `Bearer ${token({ header: { typ: 'JWT' } })}`, { refused: NOT_VALID }],
  ['alg none', `Bearer ${token({ header: { alg: 'none' } })}`, { refused: NOT_VALID }],
  ['alg HS512', `Bearer ${token({ header: { alg: 'HS512' } })}`, { refused: NOT_VALID }],
  ['alg hs256 in lower case', `Bearer ${token({ header: { alg: 'hs256' } })}`, { refused: NOT_VALID }],
  ['a crit header', `Bearer ${token({ header: { alg: 'HS256', crit: ['exp'] } })}`, { refused: NOT_VALID }],
  ['a b64 header (unencoded payload)', `Bearer ${token({ header: { alg: 'HS256', b64: false } })}`, { refused: NOT_VALID }],
  ['a header with kid and no typ', `Bearer ${token({ header: { alg: 'HS256', kid: 'key-1' } })}`, { buyer: 'ann' }],
  // The claims segment
  ['claims that are not JSON', `Bearer ${token({ claims: '{"sub":"ann",' })}`, { refused: NOT_VALID }],
  ['claims that are a JSON array', `Bearer ${token({ claims: ['ann'] })}`, { refused: NOT_VALID }],
  ['claims that are a JSON string', `Bearer ${token({ claims: '"ann"' })}`, { refused: NOT_VALID }],
  ['no exp', `Bearer ${token({ claims: { sub: 'ann' } })}`, { refused: NOT_VALID }],
  ['exp null', `Bearer ${token({ claims: { sub: 'ann', exp: null } })}`, { refused: NOT_VALID }],
  ['exp as a string of digits', `Bearer ${token({ claims: { sub: 'ann', exp: String(NOW + 60) } })}`, { refused: NOT_VALID }],
  ['exp this second', `Bearer ${token({ claims: { sub: 'ann', exp: NOW } })}`, { refused: EXPIRED }],
  ['exp the next second', `Bearer ${token({ claims: { sub: 'ann', exp: NOW + 1 } })}`, { buyer: 'ann' }],
  ['exp a fraction of a second ahead', `Bearer ${token({ claims: { sub: 'ann', exp: NOW + 0.9 } })}`, { buyer: 'ann' }],
  ['nbf this second', `Bearer ${token({ claims: { ...CLAIMS, nbf: NOW } })}`, { buyer: 'ann' }],
  ['nbf the next second', `Bearer ${token({ claims: { ...CLAIMS, nbf: NOW + 1 } })}`, { refused: NOT_VALID }],
  ['nbf as a string', `Bearer ${token({ claims: { ...CLAIMS, nbf: String(NOW) } })}`, { refused: NOT_VALID }],
  ['iat in the future', `Bearer ${token({ claims: { ...CLAIMS, iat: NOW + 3600 } })}`, { buyer: 'ann' }],
  ['iat as a string', `Bearer ${token({ claims: { ...CLAIMS, iat: String(NOW) } })}`, { refused: NOT_VALID }],
  ['no sub', `Bearer ${token({ claims: { exp: NOW + 60 } })}`, { refused: NOT_VALID }],
  ['sub null', `Bearer ${token({ claims: { sub: null, exp: NOW + 60 } })}`, { refused: BAD_SUBJECT }],
  ['sub a number', `Bearer ${token({ claims: { sub: 42, exp: NOW + 60 } })}`, { refused: BAD_SUBJECT }],
  ['sub empty', `Bearer ${token({ claims: { sub: '', exp: NOW + 60 } })}`, { refused: BAD_SUBJECT }],
  ['sub of 64 characters', `Bearer ${token({ claims: { sub: 'b'.repeat(64), exp: NOW + 60 } })}`, { buyer: 'b'.repeat(64) }],
  ['sub of 65 characters', `Bearer ${token({ claims: { sub: 'b'.repeat(65), exp: NOW + 60 } })}`, { refused: BAD_SUBJECT }],
  ['sub with a lone surrogate', `Bearer ${token({ claims: { sub: 'ann\uD800', exp: NOW + 60 } })}`, { refused: ILL_FORMED }],
  [
    'an expired token with a bad sub: expiry is judged first',
    `Bearer ${token({ claims: { sub: '', exp: NOW - 1 } })}`,
    { refused: EXPIRED },
  ],
  [
    'a bad signature on expired claims: the signature is judged first',
    `Bearer ${token({ claims: { sub: 'ann', exp: NOW - 1 }, secret: 'another-secret-of-at-least-32-characters' })}`,
    { refused: NOT_VALID },
  ],
];

describe('createBuyerAuthenticator (HS256)', () => {
  it.each(CASES.map(([name, authorization, expected]) => [name, expected, authorization] as const))(
    '%s: %j',
    (_, expected, authorization) => {
      expect(verdictOf(createBuyerAuthenticator(SECRET), authorization)).toEqual(expected);
    },
  );

  // Accepted headers are remembered so the next token of the issuer skips decoding them: a verdict must
  // not depend on what the authenticator saw before, nor change when the same token comes again.
  it.each(CASES)('%s: the same verdict twice over, after tokens of the usual headers were accepted', (_, authorization, expected) => {
    const authenticate = createBuyerAuthenticator(SECRET);
    expect(verdictOf(authenticate, `Bearer ${valid}`)).toEqual({ buyer: 'ann' });
    expect(verdictOf(authenticate, `Bearer ${token({ header: { alg: 'HS256', kid: 'key-1' } })}`)).toEqual({ buyer: 'ann' });

    expect([verdictOf(authenticate, authorization), verdictOf(authenticate, authorization)]).toEqual([expected, expected]);
  });

  it.each<[string, { exp: number; nbf?: number }, { buyer: string } | { refused: string }]>([
    ['exp 4 s ago', { exp: NOW - 4 }, { buyer: 'ann' }],
    ['exp 5 s ago', { exp: NOW - 5 }, { refused: EXPIRED }],
    ['nbf 5 s ahead', { exp: NOW + 60, nbf: NOW + 5 }, { buyer: 'ann' }],
    ['nbf 6 s ahead', { exp: NOW + 60, nbf: NOW + 6 }, { refused: NOT_VALID }],
  ])('with a clock tolerance of 5 s, %s: %j', (_, times, expected) => {
    expect(verdictOf(createBuyerAuthenticator(SECRET, 5), `Bearer ${token({ claims: { sub: 'ann', ...times } })}`)).toEqual(expected);
  });
});
