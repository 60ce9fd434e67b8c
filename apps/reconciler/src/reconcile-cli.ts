import type { Worker } from 'bullmq';
import { exitWithUsage, loadConfigOrExit, parseCommandLine } from '@flashsale/config';
import { createLogger } from '@flashsale/runtime';
import { DeadlineExceeded, withDeadline } from '@flashsale/domain';
import { bullConnectionOf, openCommandStores } from '@flashsale/bootstrap';
import type { ReconcileJobData, ReconcileResult } from '@flashsale/sales';
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
if (!Number.isInteger(saleId) || saleId < 1)
  exitWithUsage(COMMAND, values.sale === undefined ? '--sale is required' : `--sale must be a sale id, not ${values.sale}`);

const config = loadConfigOrExit();
// Its stdout is the result alone: the logs go to stderr (pino's stdout is asynchronous, and a log line
// written before the result could reach stdout after it).
const logger = createLogger('reconcile', config.LOG_LEVEL, { stream: 2 });
const stores = openCommandStores(config, logger, { name: 'reconcile-cli', poolSize: config.RECONCILER_DB_POOL_SIZE, reconcileQueue: true });
const { sales } = stores;
const workerConnection = bullConnectionOf(config);
let exitCode = 0;
// Set when the queue did not answer in time: Redis is away (or unreachable) for this command.
let redisAway = false;
let worker: Worker<ReconcileJobData, ReconcileResult> | undefined;
try {
  const result = await sales.requestReconciliation(saleId, {
    // The queue's connection waits for Redis for as long as it is away (as BullMQ needs): an operator
    // asking while Redis is away or frozen is told so within the command's deadline (the one its other
    // Redis commands have) rather than left waiting in silence.
    enqueueWithin: { ms: config.REDIS_BACKGROUND_COMMAND_TIMEOUT_MS, what: 'the reconcile queue (Redis)' },
    // A failed attempt is retried by the queue; the command waits for one drain timeout and a margin,
    // then gives up waiting (the job goes on, in a reconciler process if one runs).
    waitMs: config.RECONCILE_DRAIN_TIMEOUT_MS + 30_000,
    ifRunning: 'wait',
    // The command's own worker, once the sale is known and the job queued: it runs the job whether or not
    // a reconciler process does.
    onQueued: (running) => {
      worker = createReconcileWorker(sales, logger, { prefix: config.REDIS_PREFIX, connection: workerConnection, concurrency: 1 });
      if (running) console.error(`a reconciliation of sale ${saleId} is already running; waiting for it`);
    },
  });
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
    await stores.jobs?.close();
  })();
  if (redisAway) await withDeadline(closing, config.REDIS_COMMAND_TIMEOUT_MS, 'closing the reconcile queue').catch(() => undefined);
  else await closing;
  workerConnection.disconnect();
  await stores.close();
}
process.exit(exitCode);
