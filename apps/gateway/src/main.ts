import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, loadConfig, onShutdownSignal } from '@flashsale/config';
import { createRedis } from '@flashsale/redis-store';
import { createPrisma } from '@flashsale/order-store';
import { createReconcileJobs } from '@flashsale/jobs';
import { createGateway } from './gateway.ts';
import { runGatewayCluster } from './gateway-cluster.ts';

const config = loadConfig();
const logger = createLogger('gateway', config.LOG_LEVEL);

if (config.GATEWAY_WORKERS > 1 && cluster.isPrimary) {
  runGatewayCluster(config.GATEWAY_WORKERS, logger);
} else {
  const redis = createRedis(config.REDIS_URL, { name: 'gateway', commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS, onError: (err) => logger.warn({ err }, 'redis connection error') });
  const prisma = createPrisma(config.DATABASE_URL, config.DB_POOL_SIZE, 0, { statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
  const jobs = createReconcileJobs(config.REDIS_URL, config.REDIS_PREFIX);
  const gateway = createGateway({ config, redis, prisma, logger, jobs });
  await gateway.start();
  const server = createServer(gateway.listener);
  // Keep-alive longer than typical load balancers' idle timeout, so they never reuse a closing socket.
  server.keepAliveTimeout = 65_000;
  server.listen(config.PORT, () => {
    const { port } = server.address() as AddressInfo;
    logger.info({ port, worker: cluster.worker?.id }, 'gateway listening');
  });

  onShutdownSignal(logger, async () => {
    // Stop accepting, let requests in flight finish (each is one Redis call), then close the clients.
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
