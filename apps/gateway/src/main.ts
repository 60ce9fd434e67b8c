import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { loadConfig, parseCommandLine } from '@flashsale/config';
import { createLogger, onShutdownSignal, serveMetricsPort } from '@flashsale/runtime';
import { createRedis, redisTargetOf, refuseEvictingRedis } from '@flashsale/redis-store';
import { checkConnectionBudget, createPrisma } from '@flashsale/order-store';
import { createReconcileJobs } from '@flashsale/jobs';
import { createGateway } from './gateway.ts';
import { createGatewayMetrics } from './metrics.ts';
import { runGatewayCluster } from './gateway-cluster.ts';
import { createHttpServer, listen } from './http-server.ts';
import { GracefulStop } from './graceful-stop.ts';
import { answerSupervisorScrapes, clusterMetricsSource, SUPERVISOR_METRICS_PORT, supervisorMetricsPort } from './metrics-port.ts';

parseCommandLine({
  usage: `usage: npm run gateway

The HTTP gateway (purchases, reservations, payments, the admin API and dashboard), in the foreground
until SIGTERM. No options: configured by the environment only (PORT, REDIS_URL, DATABASE_URL,
AUTH_SECRET, ADMIN_TOKEN, GATEWAY_WORKERS, ...; docs/operations.md, "Configuration").`,
});
const config = loadConfig();
const logger = createLogger('gateway', config.LOG_LEVEL);
// `/metrics` (and `/healthz`) on METRICS_PORT, apart from the buyers' port.
const metricsPortOwner = { logger, role: 'gateway', variable: 'METRICS_PORT', config };
// In the background, never holding up the start. The supervisor judges for all GATEWAY_WORKERS processes.
if (cluster.isPrimary) void checkConnectionBudget(config, 'gateway', logger, { processes: config.GATEWAY_WORKERS });

if (config.GATEWAY_WORKERS > 1 && cluster.isPrimary) {
  // One metrics port for all the gateway processes, bound before they start so each can log it.
  const metrics = await serveMetricsPort(clusterMetricsSource(), config.METRICS_PORT, metricsPortOwner);
  runGatewayCluster(
    { count: config.GATEWAY_WORKERS, shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS, env: { [SUPERVISOR_METRICS_PORT]: String(metrics.port ?? 'none') } },
    logger,
  );
} else {
  const metrics = createGatewayMetrics();
  const onRedisError = (err: Error) => {
    metrics.storeErrors.redis.inc();
    logger.warn({ err }, 'redis connection error');
  };
  const redis = createRedis(redisTargetOf(config), { name: 'gateway', commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS, onError: onRedisError });
  const prisma = createPrisma(config.DATABASE_URL, config.GATEWAY_DB_POOL_SIZE, 0, { statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS, idleTimeoutMs: config.DB_POOL_IDLE_TIMEOUT_MS });
  const dashboardPrisma = createPrisma(config.DATABASE_URL, config.DASHBOARD_DB_POOL_SIZE, 0, { statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS, idleTimeoutMs: config.DB_POOL_IDLE_TIMEOUT_MS });
  const jobs = createReconcileJobs(redisTargetOf(config), config.REDIS_PREFIX);
  const graceful = new GracefulStop();
  const gateway = createGateway({ config, redis, prisma, dashboardPrisma, logger, jobs, stopping: () => graceful.stopping }, metrics);
  let metricsServer: Server | undefined;
  let metricsPort: number | undefined;
  if (cluster.isWorker) {
    answerSupervisorScrapes(gateway.metrics.registry);
    metricsPort = supervisorMetricsPort();
  } else {
    ({ server: metricsServer, port: metricsPort } = await serveMetricsPort(gateway.metrics.registry, config.METRICS_PORT, metricsPortOwner));
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
  logger.info({ port, metricsPort, worker: cluster.worker?.id }, 'gateway listening');
  // In the background, once Redis answers: an evicting maxmemory-policy stops the process (redis-memory.ts).
  void refuseEvictingRedis(redis, logger);

  onShutdownSignal(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
    // /readyz 503 for SHUTDOWN_DRAIN_MS while serving, every connection closed after a whole response,
    // then stop accepting and answer what is in flight (graceful-stop.ts); then close the clients. A
    // request that does not finish (a client sending its body slowly) is cut by HTTP_REQUEST_TIMEOUT_MS,
    // and the whole stop by SHUTDOWN_TIMEOUT_MS. Metrics are served to the end: the drain is worth seeing.
    await graceful.stop(server, config.SHUTDOWN_DRAIN_MS);
    metricsServer?.close();
    await gateway.close();
    if (redis.status === 'ready') {
      await jobs.close();
      await redis.quit();
    } else {
      // Redis is away: QUIT would wait in ioredis's offline queue behind the commands already waiting
      // for it, and BullMQ's close for its connections to have connected once; neither may come before
      // the deadline, and nothing is left to finish with Redis (the requests in flight are answered).
      redis.disconnect();
    }
    await Promise.all([prisma.$disconnect(), dashboardPrisma.$disconnect()]);
  });
}
