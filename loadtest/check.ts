/**
 * `npm run loadtest:check -- <k6 summary .json | sale id ...>`: the invariant check after a load run
 * made elsewhere (k6 against a deployed system). Reads the system's Redis and MySQL from REDIS_URL (or
 * REDIS_CLUSTER_NODES, as the processes do), REDIS_PREFIX and DATABASE_URL; prints lost, duplicated,
 * unexpected and oversold per sale; exits non-zero when one is not zero or a ledger does not balance.
 */
import { readFileSync } from 'node:fs';
import { loadConfig } from '@flashsale/config';
import { createRedis, redisTargetOf } from '@flashsale/redis-store';
import { createPrisma } from '@flashsale/order-store';
import { checkSaleInvariants, invariantsHold } from './runner/invariants.ts';

const args = process.argv.slice(2);
const saleIds = args.flatMap((arg) => (arg.endsWith('.json') ? (JSON.parse(readFileSync(arg, 'utf8')) as { saleIds: number[] }).saleIds : [Number(arg)]));
if (saleIds.length === 0 || saleIds.some((id) => !Number.isInteger(id) || id < 1)) {
  console.error('usage: npm run loadtest:check -- <k6 summary .json | sale id ...>');
  process.exit(2);
}
const config = loadConfig();
const redis = createRedis(redisTargetOf(config));
const prisma = createPrisma(config.DATABASE_URL, 2);
try {
  const checks = [];
  for (const saleId of saleIds) checks.push(await checkSaleInvariants(redis, prisma, config.REDIS_PREFIX, saleId));
  console.table(checks);
  process.exitCode = invariantsHold(checks) ? 0 : 1;
} finally {
  await redis.quit();
  await prisma.$disconnect();
}
