/**
 * `npm run chaos -- --matrix`: the fault matrix, every cell on a redis-server and a mariadbd of its own
 * (nothing else touched), one table at the end. The cells themselves are @flashsale/harness's
 * (fault-matrix.ts), which the suite's smoke row runs too.
 */
import { DEV_ADMIN_TOKEN } from '@flashsale/config';
import { createPrisma, migrate } from '@flashsale/order-store';
import { createRedis } from '@flashsale/redis-store';
import {
  FAULT_MEANING,
  matrixTable,
  runMatrixCell,
  startMariaDbServer,
  startRedisServer,
  type CellResult,
  type MatrixCell,
} from '@flashsale/harness';

/** Runs `cells` one after another and prints the table; the exit code: 1 if a cell broke or failed to run. */
export async function runMatrix(cells: MatrixCell[]): Promise<number> {
  const began = Date.now();
  const log = (line: string) => console.log(`[${((Date.now() - began) / 1000).toFixed(1).padStart(6)} s] ${line}`);
  log(`fault matrix: ${cells.length} cells; starting a redis-server and a mariadbd of its own`);
  const [redisServer, mariadb] = await Promise.all([startRedisServer({ appendfsync: 'always' }), startMariaDbServer()]);
  const databaseUrl = mariadb.url('flashsale_matrix');
  await migrate(databaseUrl);
  const redis = createRedis(redisServer.url, { maxRetriesPerRequest: null });
  const prisma = createPrisma(databaseUrl, 2);
  const results: CellResult[] = [];
  let failed = 0;
  try {
    const stores = {
      redisPort: Number(new URL(redisServer.url).port),
      databaseUrl,
      redis,
      prisma,
      adminToken: process.env.ADMIN_TOKEN ?? DEV_ADMIN_TOKEN,
      env: { WORKER_CLAIM_IDLE_MS: '2000', RECONCILER_WATCH_MS: '500', QUEUE_JOINS_PER_ADDRESS_PER_SECOND: '0', LOG_LEVEL: 'info' },
      log,
    };
    for (const cell of cells) {
      try {
        const result = await runMatrixCell(stores, cell);
        results.push(result);
        log(
          `${cell.fault} / ${cell.link} / ${cell.sale}: ${result.verdict}${result.broken.length > 0 ? `: ${result.broken.join('; ')}` : ''}`,
        );
      } catch (error) {
        failed += 1;
        log(`${cell.fault} / ${cell.link} / ${cell.sale}: did not run: ${(error as Error).message}`);
      }
    }
  } finally {
    redis.disconnect();
    await prisma.$disconnect();
    await Promise.all([redisServer.stop(), mariadb.stop()]);
  }
  console.log(
    `\nThe fault matrix, ${new Date().toISOString().slice(0, 10)}, ${results.length} cells in ${Math.round((Date.now() - began) / 1000)} s\n`,
  );
  console.log(matrixTable(results));
  console.log('\nFaults:');
  for (const [fault, meaning] of Object.entries(FAULT_MEANING)) console.log(`- ${fault}: ${meaning}`);
  const broken = results.filter((r) => r.verdict === 'BROKEN').length;
  console.log(`\n${broken} cells broken, ${failed} did not run, ${results.length - broken} held.`);
  return broken > 0 || failed > 0 ? 1 : 0;
}
