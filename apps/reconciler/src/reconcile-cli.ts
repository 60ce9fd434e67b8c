import type { Worker } from 'bullmq';
import { exitWithUsage, loadConfigOrExit, parseCommandLine } from '@flashsale/config';
import { createLogger } from '@flashsale/runtime';
import { DeadlineExceeded, SaleNotFound, withDeadline } from '@flashsale/domain';
import { redisTargetOf, createSaleStore } from '@flashsale/redis-store';
import { openCommandStores } from '@flashsale/bootstrap';
import { saleExists } from '@flashsale/sales';
import { bullConnection, createReconcileJobs, enqueueReconcile, type ReconcileJobData, type ReconcileResult } from '@flashsale/jobs';
import { createReconcileWorker } from './reconcile-worker.ts';

// `npm run reconcile -- --sale <id>`: reconciles one sale now and prints the result. It goes through the
// same BullMQ queue as the reconciler process (so it never runs beside another reconciliation of the
// sale) and brings its own worker, so it works whether or not a reconciler process is running.
const COMMAND = {
  usage: `usage: npm run reconcile -- --sale <id>

Reconciles one sale now (pause, wait for its stream to drain, rebuild its Redis state from MySQL,
resume) and prints the result as JSON: remaining, buyers, and the reservations counted lost. Works
with or without a reconciler process running; exit 1 when the reconciliation fails.

  --sale <id>   the sale to reconcile (required)`,
  options: { sale: { type: 'string' } },
} as const;
const { values } = parseCommandLine(COMMAND);
const saleId = Number(values.sale);
if (!Number.isInteger(saleId) || saleId < 1) exitWithUsage(COMMAND, values.sale === undefined ? '--sale is required' : `--sale must be a sale id, not ${values.sale}`);

const config = loadConfigOrExit();
// Its stdout is the result alone: the logs go to stderr (pino's stdout is asynchronous, and a log line
// written before the result could reach stdout after it).
const logger = createLogger('reconcile', config.LOG_LEVEL, { stream: 2 });
const stores = openCommandStores(config, { name: 'reconcile-cli', poolSize: config.RECONCILER_DB_POOL_SIZE });
const { redis, prisma } = stores;
const jobs = createReconcileJobs(redisTargetOf(config), config.REDIS_PREFIX);
const workerConnection = bullConnection(redisTargetOf(config));
let exitCode = 0;
// Set when the queue did not answer in time: Redis is away (or unreachable) for this command.
let redisAway = false;
let worker: Worker<ReconcileJobData, ReconcileResult> | undefined;
try {
  if (!(await saleExists(prisma, saleId))) throw new SaleNotFound(`sale ${saleId} is not in MySQL`);
  worker = createReconcileWorker(
    {
      redis,
      prisma,
      databaseUrl: config.DATABASE_URL,
      prefix: config.REDIS_PREFIX,
      logger,
      drainTimeoutMs: config.RECONCILE_DRAIN_TIMEOUT_MS,
      announce: (id) => createSaleStore(redis, config.REDIS_PREFIX).sale(id).announceChanged(),
    },
    { connection: workerConnection, concurrency: 1 },
  );
  // The queue's connection waits for Redis for as long as it is away (as BullMQ needs): an operator asking
  // while Redis is away or frozen is told so within the command's deadline (the one its other Redis
  // commands have) rather than left waiting in silence.
  const { job, running } = await withDeadline(enqueueReconcile(jobs.queue, saleId, 'operator'), config.REDIS_BACKGROUND_COMMAND_TIMEOUT_MS, 'the reconcile queue (Redis)');
  if (running) console.error(`a reconciliation of sale ${saleId} is already running; waiting for it`);
  // A failed attempt is retried by the queue; the command waits for one drain timeout and a margin,
  // then gives up waiting (the job goes on, in a reconciler process if one runs).
  const result = await job.waitUntilFinished(jobs.events, config.RECONCILE_DRAIN_TIMEOUT_MS + 30_000);
  console.log(JSON.stringify(result));
} catch (error) {
  redisAway = error instanceof DeadlineExceeded;
  console.error(`reconcile failed: ${(error as Error).message}`);
  exitCode = 1;
} finally {
  // Closing waits for the job in hand, which may be another sale's: never cut one between pause and resume.
  // With Redis away this worker holds none it could finish (it takes jobs from that Redis), and BullMQ's
  // closes would wait for Redis as its connections do: the worker stops at once and the closes get a
  // buyer's command deadline (a job it held would be found stalled and run again by a reconciler).
  const closing = (async () => {
    await worker?.close(redisAway);
    await jobs.close();
  })();
  if (redisAway) await withDeadline(closing, config.REDIS_COMMAND_TIMEOUT_MS, 'closing the reconcile queue').catch(() => undefined);
  else await closing;
  workerConnection.disconnect();
  await stores.close();
}
process.exit(exitCode);
