/**
 * `npm run loadtest:check -- <k6 summary .json | sale id ...>`: the invariant check after a load run
 * made elsewhere (k6 against a deployed system). Reads the system's Redis and MySQL from REDIS_URL (or
 * REDIS_CLUSTER_NODES, as the processes do), REDIS_PREFIX and DATABASE_URL; prints lost, duplicated,
 * unexpected and oversold per sale; exits non-zero when one is not zero or a ledger does not balance.
 */
import { readFileSync } from 'node:fs';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { createRedis, createSaleStore, redisTargetOf } from '@flashsale/redis-store';
import { createPrisma } from '@flashsale/order-store';
import { checkSaleInvariants, invariantsHold } from './runner/invariants.ts';

const COMMAND = {
  usage: `usage: npm run loadtest:check -- <k6 summary .json | sale id ...>

The invariant check of sales loaded elsewhere (k6 against a deployed system): reads REDIS_URL (or
REDIS_CLUSTER_NODES), REDIS_PREFIX and DATABASE_URL, prints lost, duplicated, unexpected and oversold per
sale, and exits 1 when one is not zero or a ledger does not balance. A .json is a k6 summary of
npm run loadtest (its saleIds are checked).`,
  allowPositionals: true,
} as const;
const args = parseCommandLine(COMMAND).positionals;
const readSummary = (path: string): number[] => {
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { saleIds: number[] }).saleIds;
  } catch (error) {
    exitWithUsage(COMMAND, `cannot read the sale ids of ${path}: ${(error as Error).message}`);
  }
};
const saleIds = args.flatMap((arg) => (arg.endsWith('.json') ? readSummary(arg) : [Number(arg)]));
if (saleIds.length === 0) exitWithUsage(COMMAND, 'no sale given');
const notIds = args.filter((arg) => !arg.endsWith('.json') && !(Number.isInteger(Number(arg)) && Number(arg) >= 1));
if (notIds.length > 0 || saleIds.some((id) => !Number.isInteger(id) || id < 1))
  exitWithUsage(COMMAND, `not sale ids: ${notIds.join(' ') || 'in the summary'}`);
const config = loadConfig();
const redis = createRedis(redisTargetOf(config));
const store = createSaleStore(redis, config.REDIS_PREFIX);
const prisma = createPrisma(config.DATABASE_URL, 2);
try {
  const checks = [];
  for (const saleId of saleIds) checks.push(await checkSaleInvariants(store, prisma, saleId));
  console.table(checks);
  process.exitCode = invariantsHold(checks) ? 0 : 1;
} finally {
  await redis.quit();
  await prisma.$disconnect();
}
