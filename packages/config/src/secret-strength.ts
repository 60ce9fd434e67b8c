/**
 * The secrets production refuses to start with. Production is the one place a secret must be a secret:
 * a value printed in this repository (the development defaults, the README's curl lines) is known to
 * anyone who read it, and a value with no randomness in it is guessed in a handful of tries.
 *
 * The rule, applied to AUTH_SECRET, ADMIN_TOKEN, PAYMENT_WEBHOOK_SECRET and METRICS_TOKEN under
 * NODE_ENV=production (outside production the development values stay, so a laptop needs no setup):
 *
 * 1. not a published value: none of PUBLISHED_SECRETS, compared without regard to letter case;
 * 2. at least MIN_DISTINCT_CHARACTERS different characters (refuses `aaaa...`, `0000...`, `abab...`);
 * 3. not one block written again and again (`abcdefghij` x 4): the value is not periodic;
 * 4. not a run: at most half of its neighbouring characters are consecutive (`0123456789abcdef`,
 *    `zyxwvu...`), the keyboard's lazy sequence.
 *
 * These catch a value with obviously no entropy, not every weak one; the way to make a good one is in
 * the message: `openssl rand -base64 48` (64 characters, 384 random bits). Of random tokens, 1 in 90 of
 * 16 hex characters (64 bits) fails rule 2 (too few different characters, by chance), about 1 in 100,000
 * of 24, none of 32 or more in 200,000 tries, nor any base64 of 16 or more.
 */

/** Every secret this repository or its documentation prints: known to anyone who read them. */
export const PUBLISHED_SECRETS: readonly string[] = [
  'dev-only-auth-secret-change-me-0123456789',
  'dev-only-admin-token',
  'dev-only-payment-webhook-secret-0123456789',
];

/** The fewest different characters a production secret may be made of. */
export const MIN_DISTINCT_CHARACTERS = 8;

/** How to make a secret that passes, said in every refusal. */
export const HOW_TO_MAKE_A_SECRET = 'make one with `openssl rand -base64 48` (for ADMIN_TOKEN and METRICS_TOKEN: `openssl rand -hex 32`)';

const published = new Set(PUBLISHED_SECRETS.map((secret) => secret.toLowerCase()));

/** Why `value` may not be a production secret, or null when it passes the rule above. */
export function weakSecretReason(value: string): string | null {
  if (published.has(value.toLowerCase())) return 'is a value published in the repository or its documentation';
  const characters = [...value];
  if (new Set(characters).size < MIN_DISTINCT_CHARACTERS) return `has fewer than ${MIN_DISTINCT_CHARACTERS} different characters`;
  if (isPeriodic(characters)) return 'is one short block repeated';
  if (isRun(characters)) return 'is a run of consecutive characters';
  return null;
}

/** Whether the value is its first k characters written over and over, for some k up to half its length. */
function isPeriodic(characters: readonly string[]): boolean {
  for (let period = 1; period <= characters.length / 2; period++) {
    if (characters.every((character, i) => character === characters[i % period])) return true;
  }
  return false;
}

/** Whether more than half the neighbouring pairs are consecutive characters (code points one apart). */
function isRun(characters: readonly string[]): boolean {
  let steps = 0;
  for (let i = 1; i < characters.length; i++) {
    if (Math.abs(characters[i]!.codePointAt(0)! - characters[i - 1]!.codePointAt(0)!) === 1) steps++;
  }
  return steps * 2 > characters.length - 1;
}
