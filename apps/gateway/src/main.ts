import cluster from 'node:cluster';
import {
  announceStarted,
  bootProcess,
  openStores,
  serveInternalPort,
  stopOnSignal,
  storesReadiness,
  type InternalPort,
} from '@flashsale/bootstrap';
import { createGateway } from './gateway.ts';
import { createGatewayMetrics } from './metrics.ts';
import { runGatewayCluster } from './gateway-cluster.ts';
import { createHttpServer, listen } from './http-server.ts';
import { GracefulStop } from './graceful-stop.ts';
import { answerSupervisorScrapes, clusterMetricsSource, SUPERVISOR_METRICS_PORT, supervisorMetricsPort } from './metrics-port.ts';

const proc = bootProcess(
  'gateway',
  `usage: npm run gateway

The HTTP gateway (purchases, reservations, payments, the admin API and dashboard), in the foreground
until SIGTERM. No options: configured by the environment only (PORT, REDIS_URL, DATABASE_URL,
AUTH_SECRET, ADMIN_TOKEN, GATEWAY_WORKERS, ...; docs/configuration.md).`,
);
const { config, logger } = proc;

if (config.GATEWAY_WORKERS > 1 && cluster.isPrimary) {
  // One metrics port (METRICS_PORT) for all the gateway processes, bound before they start so each can log it.
  const metrics = await serveInternalPort(proc, clusterMetricsSource());
  runGatewayCluster(
    {
      count: config.GATEWAY_WORKERS,
      shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
      env: { [SUPERVISOR_METRICS_PORT]: String(metrics.port ?? 'none') },
    },
    logger,
  );
} else {
  const metrics = createGatewayMetrics();
  const stores = openStores(proc, metrics.storeErrors);
  const graceful = new GracefulStop();
  const gateway = createGateway(
    {
      config,
      logger,
      sales: stores.sales,
      dashboardSales: stores.dashboardSales,
      readiness: storesReadiness(stores),
      stopping: () => graceful.stopping,
    },
    metrics,
  );
  // `/metrics` (and `/healthz`) apart from the buyers' port: this process's own, or the supervisor's.
  let internalPort: InternalPort;
  if (cluster.isWorker) {
    answerSupervisorScrapes(gateway.metrics.registry);
    internalPort = { port: supervisorMetricsPort() };
  } else {
    internalPort = await serveInternalPort(proc, gateway.metrics.registry);
  }
  // Not awaited: a gateway started while Redis or MySQL is away listens at once, answers /healthz, /readyz
  // 503 and purchases 503 with Retry-After, and takes up its work when they answer, without a restart.
  void gateway.start();
  const server = createHttpServer(graceful.wrap(gateway.listener), config, logger);
  graceful.attach(server);
  const port = await listen(server, config.PORT).catch((err: unknown) => {
    // In a cluster this kills one gateway process before it listened: the supervisor retries a few
    // times, then gives up (gateway-cluster.ts).
    logger.fatal({ err, port: config.PORT }, 'gateway cannot listen');
    process.exit(1);
  });
  // The signals are handled before the line says it listens: whoever starts it (an orchestrator, the
  // supervisor, a test) may send SIGTERM the moment it reads that line, and a signal with no handler yet
  // kills the process outright, with no stop and no 'stopped' line.
  stopOnSignal(proc, stores, {
    // /readyz 503 for SHUTDOWN_DRAIN_MS while serving, every connection closed after a whole response,
    // then stop accepting and answer what is in flight (graceful-stop.ts). A request that does not finish
    // (a client sending its body slowly) is cut by HTTP_REQUEST_TIMEOUT_MS.
    drain: async () => {
      await graceful.stop(server, config.SHUTDOWN_DRAIN_MS);
      await gateway.close();
    },
    internalPort,
  });
  announceStarted(proc, stores.redis, { port, metricsPort: internalPort.port, worker: cluster.worker?.id }, 'gateway listening');
}
