import type { RequestListener } from 'node:http';
import { saleEventsSubscription } from '@flashsale/bootstrap';
import { SaleMisses } from '@flashsale/sales';
import type { GatewayDeps } from './deps.ts';
import { createApp, publicReadBudget } from './app.ts';
import { createJoinLimits, createRequestLimits } from './request-limits.ts';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.ts';
import { createPurchaseHandler } from './purchase/purchase-handler.ts';
import { crowdRoutes } from './routes/crowd-routes.ts';
import { createQueueStatusHandler } from './routes/queue-status.ts';
import { failureAnswer } from './problem.ts';
import { createBuyerGate } from './buyer-gate.ts';
import { SaleVerdictCache } from './purchase/sale-verdict-cache.ts';
import { LiveSaleDirectory } from './purchase/live-sale-directory.ts';
import { listenToSaleEvents, type SaleEventsListener } from './purchase/sale-events-listener.ts';
import { LiveFeed } from './dashboard/live-feed.ts';
import { createLiveViews } from './dashboard/live-views.ts';
import { LiveStreams } from './dashboard/live-streams.ts';
import { SaleHistory } from './dashboard/sale-history.ts';
import { doorSeries } from './dashboard/door-view.ts';
import { TrafficSampler } from './dashboard/traffic-sampler.ts';

export interface Gateway {
  /** The server's request listener: the crowd routes (purchase, queue status), then the Express app for every other. */
  listener: RequestListener;
  verdicts: SaleVerdictCache;
  liveSales: LiveSaleDirectory;
  /** Its Prometheus metrics, served apart from the app, on METRICS_PORT (see metrics-port.ts). */
  metrics: GatewayMetrics;
  /** The dashboard's live views (GET /admin/live), read once per interval for every page watching. */
  liveFeed: LiveFeed;
  /** The dashboard's history of every live sale and of this process, taken whether or not a page watches. */
  history: SaleHistory;
  /** The dashboard's open live streams, capped per session and per process. */
  liveStreams: LiveStreams;
  /**
   * Starts the background parts: the sale events subscription, made whenever Redis answers, and the
   * live-sale directory, read from MySQL now and then, and the dashboard's history. Waits for neither store: the gateway may listen
   * before (main.ts does, so a gateway started while Redis or MySQL is away serves /healthz and answers
   * 503 meanwhile); until the subscription is in place the verdict cache caches nothing. The promise
   * resolves once the first subscription is in place and the directory was read once (tests await it).
   */
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The gateway of one process: the crowd routes, the app, and the background parts of the purchase path.
 * The one construction of it, for `main.ts` and the tests alike; until `start()` the verdict cache caches
 * nothing and the live-sale directory is empty (a test of the app alone may leave them so). `metrics`
 * is main.ts's, made before the Redis client so its connection errors are counted from the first.
 */
export function createGateway(deps: GatewayDeps, metrics: GatewayMetrics = createGatewayMetrics()): Gateway {
  const { config, sales } = deps;
  const verdicts = new SaleVerdictCache(config.SALE_VERDICT_TTL_MS, deps.now ?? (() => performance.now()), (saleId) =>
    sales.saleBuyers(saleId, config.SALE_VERDICT_MAX_HOLDERS),
  );
  const misses = new SaleMisses(config.SALE_MISS_TTL_MS, deps.now ?? (() => performance.now()));
  const liveSales = new LiveSaleDirectory(sales, deps.logger, config.LIVE_SALES_REFRESH_MS);
  // One purchase budget per buyer and address, spent by purchases and cancels alike: a cancel is the
  // other half of a buy-and-give-back loop, and costs MySQL where a purchase costs Redis.
  const buyingLimits = createRequestLimits(config, deps.now);
  const buyerOf = createBuyerGate(config);
  const handlePurchase = createPurchaseHandler(deps, metrics, { verdicts, liveSales, limits: buyingLimits, buyerOf });
  const history = new SaleHistory(deps.dashboardSales, new TrafficSampler(metrics), deps.logger, {
    stepMs: config.DASHBOARD_HISTORY_STEP_MS,
    windowMs: config.DASHBOARD_HISTORY_SECONDS * 1000,
    maxSales: config.DASHBOARD_HISTORY_MAX_SALES,
    liveSaleIds: () => liveSales.liveSaleIds(),
    extraSeries: [doorSeries(deps.dashboardSales)],
  });
  const door = sales.openDoor({
    authSecret: config.AUTH_SECRET,
    frontierMaxAgeMs: config.DOOR_FRONTIER_MAX_AGE_MS,
    misses,
    flagClaim: config.QUEUE_FLAG_CLAIM,
    onShadowJoin: (reason) => metrics.shadowJoins.inc({ reason }),
  });
  const views = createLiveViews(deps, history, (saleId) => door.shadowJoins(saleId));
  const liveFeed = new LiveFeed((topic) => views.read(topic), config.DASHBOARD_INTERVAL_MS, deps.logger);
  const liveStreams = new LiveStreams(config.DASHBOARD_STREAMS_PER_SESSION, config.DASHBOARD_STREAMS_PER_PROCESS);
  const queueLimits = createRequestLimits(config, deps.now);
  const joinLimits = createJoinLimits(config, deps.now);
  const fail = failureAnswer(deps.logger, (error) => metrics.storeErrors.count(error));
  const publicReads = publicReadBudget(deps);
  const app = createApp(deps, { buyerOf, buyingLimits, queueLimits, joinLimits, door, fail, misses, publicReads }, metrics, {
    feed: liveFeed,
    views,
    streams: liveStreams,
  });
  const queueStatus = createQueueStatusHandler({
    door,
    buyerOf,
    limits: queueLimits,
    fail,
    deadlineMs: config.REQUEST_DEADLINE_MS,
  });
  let events: SaleEventsListener | undefined;
  return {
    listener: crowdRoutes({ purchase: handlePurchase, queueStatus, publicReads }, app),
    verdicts,
    liveSales,
    metrics,
    liveFeed,
    history,
    liveStreams,
    async start() {
      events = listenToSaleEvents(saleEventsSubscription(config), config.REDIS_PREFIX, [verdicts, misses], deps.logger);
      await Promise.all([events.subscribed, liveSales.start()]);
      history.start();
    },
    async close() {
      liveSales.stop();
      liveFeed.close();
      // The history's step still reading Redis ends before the caller closes the connection.
      await Promise.all([history.stop(), events?.close(), views.close()]);
    },
  };
}
