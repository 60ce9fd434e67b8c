import { Router } from 'express';
import { readinessProbe } from '@flashsale/config';
import type { GatewayDeps } from '../deps.ts';

/**
 * /healthz (the process runs), /readyz (Redis and MySQL answer). Both answer from the moment the gateway
 * listens, which it does at once, whether the stores are there or not. Not /metrics: it tells whoever
 * asks the traffic, the outcomes and the process's insides, so it is served on the internal METRICS_PORT
 * only.
 */
export function healthRouter({ redis, prisma }: GatewayDeps): Router {
  const router = Router();
  const readiness = readinessProbe({ redis: () => redis.ping(), mysql: () => prisma.$queryRaw`SELECT 1` });
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const report = await readiness();
    res.status(report.status === 'ready' ? 200 : 503).json(report);
  });
  return router;
}
