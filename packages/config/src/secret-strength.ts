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
export const HOW_TO_MAKE_A_SECRET = 'make one with `openssl rand -base64 32` (or -base64 48; for ADMIN_TOKEN and METRICS_TOKEN `openssl rand -hex 32` works too)';

const published = PUBLISHED_SECRETS.map((secret) => secret.toLowerCase());

let estimator: ZxcvbnFactory | undefined;
/** Made at the first check (production only): loading the dictionaries costs a start that checks nothing. */
function strengthEstimator(): ZxcvbnFactory {
  estimator ??= new ZxcvbnFactory({ dictionary, graphs: adjacencyGraphs });
  return estimator;
}

/** Why `value` may not be a production secret, or null when it passes the rule above. */
export function weakSecretReason(value: string): string | null {
  const trimmed = value.trim();
  const lower = trimmed.toLowerCase();
  if (published.some((secret) => lower.includes(secret))) return 'contains a value published in the repository or its documentation';
  const { guessesLog10 } = strengthEstimator().check(trimmed, [...PUBLISHED_SECRETS]);
  if (guessesLog10 < MIN_GUESSES_LOG10) return `is too easy to guess (a strength estimator puts about 10^${Math.floor(guessesLog10)} guesses on it, fewer than 10^${MIN_GUESSES_LOG10})`;
  return null;
}
