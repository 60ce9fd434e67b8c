import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { serveMetrics } from '@flashsale/runtime';
import { createRedis } from '@flashsale/redis-store';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, startGateway, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer, expectProblem } from '../../../../test/support/http.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

describe('health and metrics', () => {
  it('answers /healthz with 200 while the process runs', async () => {
    const res = await fetch(`${gateway.url}/healthz`);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz with 200 when Redis and MySQL answer', async () => {
    const res = await fetch(`${gateway.url}/readyz`);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready', checks: { redis: 'up', mysql: 'up' } });
  });

  it('answers /readyz with 503 naming Redis when Redis does not answer', async () => {
    // Nothing listens on port 1: the gateway's Redis is down from the start.
    const deadRedis = createRedis('redis://127.0.0.1:1', { maxRetriesPerRequest: 0 });
    deadRedis.on('error', () => {});
    const down = await startGateway({ ...ctx, redis: deadRedis });
    try {
      const res = await fetch(`${down.url}/readyz`);

      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'not_ready', checks: { redis: 'down', mysql: 'up' } });
    } finally {
      await down.close();
      deadRedis.disconnect();
    }
  });

  it('counts purchases by outcome in the metrics served on the metrics port', async () => {
    // As main.ts serves them: the gateway's registry on METRICS_PORT, a server of its own.
    const metricsServer = serveMetrics(gateway.gateway.metrics.registry, 0);
    await once(metricsServer, 'listening');
    try {
      const sale = await createLiveSale(ctx, { stock: 1 });
      for (const buyer of ['metrics-a', 'metrics-b']) {
        await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, { method: 'POST', headers: bearer(buyerToken(buyer)) });
      }

      const res = await fetch(`http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`);

      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const lines = (await res.text()).split('\n');
      expect(lines).toContain('# TYPE flashsale_purchases_total counter');
      expect(lines).toContain('flashsale_purchases_total{outcome="reserved"} 1');
      expect(lines).toContain('flashsale_purchases_total{outcome="SOLD_OUT"} 1');
      expect(lines).toContain('flashsale_purchase_duration_seconds_count 2');
    } finally {
      metricsServer.close();
    }
  });

  it("answers /metrics on the buyers' port with a 404 problem, like any unknown route", async () => {
    await expectProblem(await fetch(`${gateway.url}/metrics`), 404, 'NOT_FOUND', 'no route for GET /metrics');
  });

  it('answers an unknown route with a 404 problem', async () => {
    await expectProblem(await fetch(`${gateway.url}/api/nope`), 404, 'NOT_FOUND', 'no route for GET /api/nope');
  });

  it('answers a known path with an unsupported method with a 404 problem', async () => {
    await expectProblem(
      await fetch(`${gateway.url}/api/sales/1`, { method: 'DELETE' }),
      404,
      'NOT_FOUND',
      'no route for DELETE /api/sales/1',
    );
  });
});
