import { Router, type RequestHandler } from 'express';
import type { GatewayDeps } from '../deps.ts';

/**
 * /healthz (the process runs), /readyz (Redis and MySQL answer, and the process is not stopping). Both answer from the moment the gateway
 * listens, which it does at once, whether the stores are there or not. Not /metrics: it tells whoever
 * asks the traffic, the outcomes and the process's insides, so it is served on the internal METRICS_PORT
 * only.
 */
export function healthRouter({ readiness, stopping }: GatewayDeps, budget: RequestHandler): Router {
  const router = Router();
  // 200 while the process runs (it is alive, stopping or not); the body says `stopping` during the
  // drain, for a balancer that checks liveness rather than readiness (infra/haproxy.cfg).
  router.get('/healthz', (_req, res) => {
    res.json({ status: stopping?.() ? 'stopping' : 'ok' });
  });
  // Each readiness answer asks both stores: a prober's address has the public reads' budget.
  router.get('/readyz', budget, async (_req, res) => {
    // A stopping process is not ready whatever its stores say: the balancer must stop sending first.
    if (stopping?.()) {
      res.status(503).json({ status: 'stopping' });
      return;
    }
    const report = await readiness();
    res.status(report.status === 'ready' ? 200 : 503).json(report);
  });
  return router;
}
