import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEV_ADMIN_TOKEN, DEV_AUTH_SECRET, DEV_PAYMENT_WEBHOOK_SECRET } from './config.ts';
import { JUDGED_PREFIX, PUBLISHED_SECRETS, weakSecretReason } from './secret-strength.ts';

const root = new URL('../../../', import.meta.url);

/**
 * Every literal that what operators read or run (README, docs, infra, scripts, load tests, benchmarks,
 * Dockerfile) presents as a secret: `Bearer X`, `NAME=X`, and `NAME || 'X'` / `NAME ?? 'X'` fallbacks.
 */
function secretsPrintedInTheRepository(): Map<string, string> {
  const files = execFileSync('git', ['ls-files', 'README.md', 'Dockerfile', 'docs', 'infra', 'scripts', 'loadtest', 'bench'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((file) => /\.(md|ya?ml|ts|js|mjs|sh|cfg|conf|env|json)$|Dockerfile$/.test(file));
  const patterns = [
    /Bearer ([^\s'"`]+)/g,
    /\b(?:[A-Z_]*SECRET|[A-Z_]*TOKEN)=([^\s'"`]+)/g,
    /\b(?:[A-Z_]*SECRET|[A-Z_]*TOKEN)\s*(?:\|\||\?\?)\s*['"]([^'"]+)['"]/g,
  ];
  const found = new Map<string, string>();
  for (const file of files) {
    const text = readFileSync(new URL(file, root), 'utf8');
    for (const pattern of patterns) {
      for (const [, value] of text.matchAll(pattern)) {
        // Placeholders and variables, not values: `...`, `<32+ characters>`, `$TOKEN`, `${token}`, `-`.
        if (/^(\.\.\.|<|\$|-$)/.test(value!)) continue;
        found.set(value!, file);
      }
    }
  }
  return found;
}

const PUBLISHED = 'contains a value published in the repository or its documentation';
const GUESSABLE = /^is too easy to guess \(a strength estimator puts about 10\^\d+ guesses on it, fewer than 10\^16\)$/;

describe('weakSecretReason', () => {
  it.each([
    ['the development admin token', DEV_ADMIN_TOKEN],
    ['the development auth secret, in capitals', DEV_AUTH_SECRET.toUpperCase()],
    ['the development webhook secret', DEV_PAYMENT_WEBHOOK_SECRET],
    ['the development auth secret plus one character', `${DEV_AUTH_SECRET}X`],
    ['the development admin token plus "="', `${DEV_ADMIN_TOKEN}=`],
    [
      'the development payment secret in mixed case with a trailing space',
      `${DEV_PAYMENT_WEBHOOK_SECRET.slice(0, 10).toUpperCase()}${DEV_PAYMENT_WEBHOOK_SECRET.slice(10)} `,
    ],
    ['the development auth secret inside another value', `prefix-${DEV_AUTH_SECRET}-suffix`],
  ])('refuses %s: it contains a published value', (_, value) => {
    expect(weakSecretReason(value)).toBe(PUBLISHED);
  });

  it.each([
    ['a word repeated, then digits in a row', 'passwordpasswordpassword12345678'],
    ['one repeated letter', 'a'.repeat(32)],
    ['one repeated digit', '0'.repeat(16)],
    ['seven letters repeated', 'abcdefgabcdefgabcdefgabcdefgabcd'],
    ['a block repeated', 'Kx9#pQ2m'.repeat(4)],
    ['a run of digits and letters', '0123456789abcdef'],
    ['a run downwards', 'zyxwvutsrqponmlkjihgfedcba987654'],
    ['a keyboard walk', 'qwertyuiopasdfghjklzxcvbnm123456'],
    ['a common password in l33t with a year', 'P@ssw0rdP@ssw0rd2026!Summer2026!'],
    ['a random value padded with spaces to look long', `  ${'Kx9#pQ2m'}                        `],
    ['a word repeated past the first 32 characters', 'passwordpassword'.repeat(4)],
    // Its first 32 characters pass the plain bar (10^20.6: "correcthor" cut short is priced as random
    // characters), not the prefix's (10^24); the whole is a repeat and is read.
    ['words whose first 32 characters would pass on their own', 'zxcvbnmabcdef-correcthorsecorrecthorse'],
  ])('refuses %s: the estimator finds it guessable', (_, value) => {
    expect(weakSecretReason(value)).toMatch(GUESSABLE);
  });

  it('accepts what `openssl rand -base64 32`, `-base64 48` and `-hex 32` make', () => {
    for (let i = 0; i < 20; i++) {
      expect(weakSecretReason(randomBytes(32).toString('base64'))).toBeNull();
      expect(weakSecretReason(randomBytes(48).toString('base64'))).toBeNull();
      expect(weakSecretReason(randomBytes(32).toString('hex'))).toBeNull();
    }
  });

  it('reads the whole of a secret whose first 32 characters fall short: one whose randomness starts late passes', () => {
    expect(weakSecretReason(`flashsale-production-auth-${randomBytes(32).toString('hex')}`)).toBeNull();
    expect(weakSecretReason(`${'a'.repeat(JUDGED_PREFIX)}${randomBytes(24).toString('base64')}`)).toBeNull();
  });

  it('refuses every secret the repository prints for operators to read or run', () => {
    const printed = secretsPrintedInTheRepository();
    // The scan finds what it is meant to find: the README's and the scripts' development values.
    expect([...printed.keys()]).toEqual(expect.arrayContaining([DEV_ADMIN_TOKEN, DEV_AUTH_SECRET]));
    for (const [value, file] of printed) expect({ value, file, reason: weakSecretReason(value) }).not.toMatchObject({ reason: null });
  });

  it('lists the development defaults as published', () => {
    expect(PUBLISHED_SECRETS).toEqual(expect.arrayContaining([DEV_ADMIN_TOKEN, DEV_AUTH_SECRET, DEV_PAYMENT_WEBHOOK_SECRET]));
  });
});
