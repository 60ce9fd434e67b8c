import cluster from 'node:cluster';
import { createLogger, loadConfig, onShutdownSignal } from '@flashsale/config';
import { createRedis } from '@flashsale/redis-store';
import { createPrisma } from '@flashsale/order-store';
import { createReconcileJobs } from '@flashsale/jobs';
import { createGateway } from './gateway.ts';
import { runGatewayCluster } from './gateway-cluster.ts';
import { createHttpServer, listen } from './http-server.ts';

const config = loadConfig();
const logger = createLogger('gateway', config.LOG_LEVEL);

if (config.GATEWAY_WORKERS > 1 && cluster.isPrimary) {
  runGatewayCluster({ count: config.GATEWAY_WORKERS, shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS }, logger);
} else {
  const redis = createRedis(config.REDIS_URL, { name: 'gateway', commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS, onError: (err) => logger.warn({ err }, 'redis connection error') });
  const prisma = createPrisma(config.DATABASE_URL, config.DB_POOL_SIZE, 0, { statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
  const jobs = createReconcileJobs(config.REDIS_URL, config.REDIS_PREFIX);
  const gateway = createGateway({ config, redis, prisma, logger, jobs });
  await gateway.start();
  const server = createHttpServer(gateway.listener, config, logger);
  const port = await listen(server, config.PORT).catch((err: unknown) => {
    // In a cluster this kills one gateway process before it listened: the supervisor retries a few
    // times, then gives up (gateway-cluster.ts).
    logger.fatal({ err, port: config.PORT }, 'gateway cannot listen');
    process.exit(1);
  });
  logger.info({ port, worker: cluster.worker?.id }, 'gateway listening');

  onShutdownSignal(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
    // Stop accepting, let requests in flight finish (each is one Redis call), then close the clients.
    // A request that does not finish (a client sending its body slowly) is cut by HTTP_REQUEST_TIMEOUT_MS,
    // and the whole stop by SHUTDOWN_TIMEOUT_MS.
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await gateway.close();
    await jobs.close();
    await redis.quit();
    await prisma.$disconnect();
  });
}
