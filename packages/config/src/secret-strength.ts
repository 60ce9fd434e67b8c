import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import { adjacencyGraphs, dictionary } from '@zxcvbn-ts/language-common';

/**
 * The secrets production refuses to start with. Production is the one place a secret must be a secret:
 * a value printed in this repository (the development defaults, the README's curl lines) is known to
 * anyone who read it, and a value with little randomness in it is guessed.
 *
 * The rule, applied to AUTH_SECRET, ADMIN_TOKEN, PAYMENT_WEBHOOK_SECRET and METRICS_TOKEN under
 * NODE_ENV=production (outside production the development values stay, so a laptop needs no setup), to
 * the value with its surrounding white space trimmed (a space added is no strength):
 *
 * 1. it contains none of PUBLISHED_SECRETS, without regard to letter case: a published value with a
 *    character added, a case changed or a suffix is the published value to whoever tries variations;
 * 2. a strength estimator, zxcvbn (`@zxcvbn-ts/core`, with the common passwords, names and keyboard
 *    layouts of `@zxcvbn-ts/language-common`, and the published values as known inputs), puts at least
 *    10^MIN_GUESSES_LOG10 guesses on it: words, repeats, sequences, keyboard walks, dates and l33t spellings
 *    count for what they are (`passwordpasswordpassword12345678` is a few thousand guesses), random
 *    characters for their length.
 *
 * The way to make a good one is in the message: `openssl rand -base64 48` (64 characters, 384 random
 * bits), which the estimator puts far above the bar, as it does `openssl rand -hex 32`.
 *
 * The estimator reads a secret's first JUDGED_PREFIX characters first, and the whole only when they fall
 * short (judgedGuessesLog10): its matching grows with the square of the length it reads (every substring
 * up to 20 characters, against each dictionary, for each of up to 100 l33t readings of the value), about
 * 100 ms of CPU for a 64-character secret against 30 ms for 32 characters, paid by every production start.
 */

/** Every secret this repository or its documentation prints: known to anyone who read them. */
export const PUBLISHED_SECRETS: readonly string[] = [
  'dev-only-auth-secret-change-me-0123456789',
  'dev-only-admin-token',
  'dev-only-payment-webhook-secret-0123456789',
];

/**
 * The fewest guesses (log10) the estimator may put on a production secret: 10^16, what it puts on 16
 * random characters. Far beyond an online attack; the secrets a person would type fall short of it.
 */
export const MIN_GUESSES_LOG10 = 16;

/** How to make a secret that passes, said in every refusal. */
export const HOW_TO_MAKE_A_SECRET =
  'make one with `openssl rand -base64 32` (or -base64 48; for ADMIN_TOKEN and METRICS_TOKEN `openssl rand -hex 32` works too)';

const published = PUBLISHED_SECRETS.map((secret) => secret.toLowerCase());

let estimator: ZxcvbnFactory | undefined;
/** Made at the first check (production only): loading the dictionaries costs a start that checks nothing. */
function strengthEstimator(): ZxcvbnFactory {
  estimator ??= new ZxcvbnFactory({ dictionary, graphs: adjacencyGraphs });
  return estimator;
}

/**
 * How many characters of a secret the estimator reads first, and the guesses (log10) they must reach to
 * stand for the whole. 32 random characters are put at 10^28 or more, hex or base64 (300 of each: hex
 * 10^28.8 at the least), so a secret made as HOW_TO_MAKE_A_SECRET says is judged on them alone.
 */
export const JUDGED_PREFIX = 32;
export const PREFIX_MIN_GUESSES_LOG10 = MIN_GUESSES_LOG10 + 8;

/**
 * The guesses (log10) the rule puts on `value`: its first JUDGED_PREFIX characters' when they reach
 * 10^PREFIX_MIN_GUESSES_LOG10, else the whole value's.
 *
 * Why a strong prefix is enough: whoever guesses the value has guessed its prefix with it, so the value
 * takes at least as many guesses as its prefix. Why the prefix must clear the bar by 8 orders: the
 * estimator prices a token cut at the prefix's end (a word, a repeat's unit) as random characters, more
 * than it is worth whole, so a prefix can pass where the whole would not: 3,000 values made of common
 * words, keyboard walks and short hex runs, 33-62 characters, gave 7 whose prefix passed the plain bar and
 * whose whole did not, the prefix at most 4.6 orders above the bar (`zxcvbnmabcdef-correcthorsecorrecthorse`).
 * Any prefix that falls short sends the whole value to the estimator: a weak value, or one whose
 * randomness starts late (a name, then random characters), is judged whole.
 */
function judgedGuessesLog10(value: string): number {
  if (value.length > JUDGED_PREFIX) {
    const prefix = strengthEstimator().check(value.slice(0, JUDGED_PREFIX), [...PUBLISHED_SECRETS]).guessesLog10;
    if (prefix >= PREFIX_MIN_GUESSES_LOG10) return prefix;
  }
  return strengthEstimator().check(value, [...PUBLISHED_SECRETS]).guessesLog10;
}

/** Why `value` may not be a production secret, or null when it passes the rule above. */
export function weakSecretReason(value: string): string | null {
  const trimmed = value.trim();
  const lower = trimmed.toLowerCase();
  if (published.some((secret) => lower.includes(secret))) return 'contains a value published in the repository or its documentation';
  const guessesLog10 = judgedGuessesLog10(trimmed);
  if (guessesLog10 < MIN_GUESSES_LOG10)
    return `is too easy to guess (a strength estimator puts about 10^${Math.floor(guessesLog10)} guesses on it, fewer than 10^${MIN_GUESSES_LOG10})`;
  return null;
}
