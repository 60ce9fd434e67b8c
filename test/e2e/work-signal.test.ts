import { afterAll, beforeAll, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { buyerToken, createHttpClient } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// The gateway's "work waiting" signal across real processes: the worker's sweep is turned down to once
// in ten minutes, so an order that appears at once was read because the gateway said so.

let system: System;
beforeAll(async () => {
  system = await startSystem({ env: { WORKER_SWEEP_MS: '600000', WORKER_SWEEP_PER_SECOND: '1' }, reconciler: false });
});
afterAll(async () => {
  await system?.stop();
});

it('a purchase through a gateway becomes an order long before the sweep, on a new sale and again after the sale went quiet', async () => {
  const saleId = await system.createSale({ stock: 10 });
  const client = createHttpClient(system.gateways[0]!.url, 1);
  const waited: number[] = [];
  try {
    for (const buyer of ['first', 'after-quiet']) {
      const res = await client.send('POST', `/api/sales/${saleId}/purchase`, {
        headers: { authorization: `Bearer ${buyerToken(buyer)}` },
        body: { quantity: 1 },
      });
      expect(res.status).toBe(202);
      const reservationId = res.body.reservationId as string;
      const started = performance.now();
      await until(
        () => system.ctx.prisma.order.count({ where: { reservationId } }),
        (n) => n === 1,
        60_000,
      );
      waited.push(performance.now() - started);
      // A sale stays hot 2 s after its last signal or entries: past that, only a signal brings the next.
      await sleep(2500);
    }
  } finally {
    client.close();
  }
  expect(waited).toHaveLength(2);
  // Well within a second on an idle machine; a tenth of the 10-minute sweep is the bound, so that only
  // the signal can have brought the order, however busy the machine.
  for (const ms of waited) expect(ms).toBeLessThan(60_000);
});
