import { announceStarted, bootProcess, listenForWorkSignals, openStores, serveStoresPort, stopOnSignal } from '@flashsale/bootstrap';
import { OrderWorker } from './order-worker.ts';
import { createWorkerMetrics } from './metrics.ts';
import { OrderExpiry } from './order-expiry.ts';
import { warmUp } from './warm-up.ts';

const proc = bootProcess(
  'worker',
  `usage: npm run worker

The order workers: read the sales' reservation streams, write the orders to MySQL in batches, expire
unpaid orders; in the foreground until SIGTERM (finishes the batch in hand, then exits). No options:
configured by the environment only (REDIS_URL, DATABASE_URL, WORKER_PORT, WORKER_BATCH_SIZE, ...;
docs/configuration.md).`,
);
const { config, logger } = proc;
const metrics = createWorkerMetrics();
const stores = openStores(proc, metrics.storeErrors);
const { redis, sales } = stores;

const worker = new OrderWorker(
  { sales, logger, observer: metrics.observer },
  {
    batchSize: config.WORKER_BATCH_SIZE,
    idleMs: config.WORKER_IDLE_MS,
    batchWaitMs: config.WORKER_BATCH_WAIT_MS,
    claimIdleMs: config.WORKER_CLAIM_IDLE_MS,
    maxDeliveries: config.WORKER_MAX_DELIVERIES,
    salesRefreshMs: config.WORKER_SALES_REFRESH_MS,
    writesInFlight: config.WORKER_WRITES_IN_FLIGHT,
    sweepMs: config.WORKER_SWEEP_MS,
    sweepPerSecond: config.WORKER_SWEEP_PER_SECOND,
  },
);
// The gateways' "work waiting" signal, on a connection of its own (a subscribed connection runs nothing
// else). Not awaited: with Redis away the worker starts all the same, and the sweep reads every sale.
const subscriber = listenForWorkSignals(config, logger, {
  onSale: (saleId) => worker.signal(saleId),
  onResubscribed: () => worker.sweepAll(),
});
metrics.watch(worker);
const expiry = new OrderExpiry(
  { sales, logger },
  { everyMs: config.EXPIRY_SWEEP_MS, batchSize: config.EXPIRY_BATCH_SIZE },
  metrics.expiryObserver,
);
const internalPort = await serveStoresPort(proc, metrics.registry, stores);

// Before the warm-up, which waits up to 2 s for a store that is away: a signal then is handled too.
stopOnSignal(proc, stores, {
  work: () => {
    subscriber.disconnect();
    return Promise.all([worker.stop(), expiry.stop()]);
  },
  // The entries of the round in hand stay pending and another worker takes them over, finding written
  // any batch whose commit came before the exit: the same as a crash, which loses nothing.
  onRedisAway: () => logger.warn({ heldEntries: worker.heldEntries() }, 'Redis is away: stopping without waiting for the round in hand'),
  stopped: () => logger.info({ ...worker.stats, ...expiry.totals }, 'worker totals'),
  internalPort,
});
await warmUp(stores, logger);
worker.start();
expiry.start();
announceStarted(proc, redis, { consumer: worker.consumer, prefix: config.REDIS_PREFIX, port: internalPort.port }, 'worker started');
