import { Router } from 'express';
import type { GatewayDeps } from '../deps.ts';

const READY_TIMEOUT_MS = 1000;

function withTimeout<T>(promise: Promise<T>): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timed out')), READY_TIMEOUT_MS).unref()),
  ]);
}

/**
 * /healthz (the process runs), /readyz (Redis and MySQL answer). Not /metrics: it tells whoever asks the
 * traffic, the outcomes and the process's insides, so it is served on the internal METRICS_PORT only.
 */
export function healthRouter({ redis, prisma }: GatewayDeps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const [redisCheck, mysqlCheck] = await Promise.allSettled([withTimeout(redis.ping()), withTimeout(prisma.$queryRaw`SELECT 1`)]);
    const checks = { redis: redisCheck.status === 'fulfilled' ? 'up' : 'down', mysql: mysqlCheck.status === 'fulfilled' ? 'up' : 'down' };
    const ready = checks.redis === 'up' && checks.mysql === 'up';
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks });
  });
  return router;
}
