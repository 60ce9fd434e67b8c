/**
 * `npm run --silent token -- <buyer> [--expires-in 1h]`: prints a buyer token for calling the gateway by
 * hand, signed HS256 with AUTH_SECRET as the gateway reads it (the development secret outside production),
 * by the harness's one signer. `--expires-in` takes seconds, or a number with s, m, h or d; default 1h.
 * Only the token goes to stdout, so `TOKEN=$(npm run --silent token -- alice)` works.
 */
import { ConfigError, exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { buyerToken } from '@flashsale/harness';

const COMMAND = {
  usage: `usage: npm run --silent token -- <buyer> [--expires-in <seconds | 30m | 12h | 7d>]

Prints an HS256 buyer token for <buyer> (1 to 64 characters), signed with AUTH_SECRET as the gateway
reads it, and nothing else: TOKEN=$(npm run --silent token -- alice).

  --expires-in <d>   how long it is valid: seconds, or a number with s, m, h or d (default 1h)`,
  options: { 'expires-in': { type: 'string', default: '1h' } },
  allowPositionals: true,
} as const;
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
// What the gateway takes as a buyer id (the token's `sub`): 1 to 64 characters.
const MAX_BUYER_ID = 64;

/** Seconds of a duration such as `90`, `90s`, `15m`, `1h`, `7d`; undefined when it is not one. */
function secondsOf(duration: string): number | undefined {
  const match = /^([1-9][0-9]*)([smhd]?)$/.exec(duration);
  return match ? Number(match[1]) * UNIT_SECONDS[match[2] || 's']! : undefined;
}

const parsed = parseCommandLine(COMMAND);
const [buyer, ...extra] = parsed.positionals;
if (buyer === undefined) exitWithUsage(COMMAND, 'no buyer given');
if (extra.length > 0) exitWithUsage(COMMAND, `unexpected arguments: ${extra.join(' ')}`);
const length = [...buyer].length;
if (length < 1 || length > MAX_BUYER_ID || !buyer.isWellFormed())
  exitWithUsage(COMMAND, `the buyer id must be 1 to ${MAX_BUYER_ID} characters`);
const ttlSeconds = secondsOf(parsed.values['expires-in']);
if (ttlSeconds === undefined) exitWithUsage(COMMAND, `--expires-in ${parsed.values['expires-in']} is not a duration`);

let secret: string;
try {
  secret = loadConfig().AUTH_SECRET;
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  throw error;
}
console.log(buyerToken(buyer, { secret, ttlSeconds }));
