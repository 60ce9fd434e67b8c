import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { startSystem, type System } from '../support/system.ts';
import { createQueuedSale, doorBuyer } from '../support/door.ts';
import { bearer } from '../support/http.ts';
import { until } from '../support/until.ts';

// What the door tells a buyer is true of what it holds: a used turn
// is `used` (their order says the rest), whatever became of that order; `expired` is said only of a turn
// whose abandonment the door recorded. Real gateway, workers (the order expiry) and reconciler.

let system: System;
beforeAll(async () => {
  system = await startSystem({ workers: 1 });
});
afterAll(async () => {
  await system?.stop();
});

describe('what the door says of a turn', () => {
  it('a used turn is `used`, never `admitted`, also once its order expired unpaid; the buyer is not admitted again', async () => {
    const url = system.gateways[0]!.url;
    const { id } = await createQueuedSale(system.ctx, url, {
      stock: 3,
      admitPerSecond: 10,
      admissionTtlSeconds: 600,
      startsIn: 1000,
      paymentWindowSeconds: 10,
    });
    const b = doorBuyer(url, id, 'used-turn');
    expect((await b.join()).status).toBe(200);
    const admitted = await b.waitFor('admitted');
    // Showing up (the buyer's page calls it when it shows the turn): the state, the turn as it runs.
    const here = await fetch(`${url}/api/sales/${id}/queue/here`, {
      method: 'POST',
      headers: { ...bearer(buyerToken(b.userId)), 'queue-ticket': b.ticket! },
    });
    expect(here.status).toBe(200);
    expect(await here.json()).toMatchObject({ state: 'admitted', admittedUntil: admitted.admittedUntil });
    const noTicket = await fetch(`${url}/api/sales/${id}/queue/here`, { method: 'POST', headers: bearer(buyerToken(b.userId)) });
    expect({ status: noTicket.status, code: ((await noTicket.json()) as { code: string }).code }).toEqual({
      status: 400,
      code: 'INVALID_QUEUE_TICKET',
    });
    const bought = await b.purchase();
    expect(bought.status).toBe(202);
    expect((await b.status()).body).toMatchObject({ state: 'used', position: null, admittedUntil: null });

    const reservation = `${url}/api/reservations/${String(bought.body.reservationId)}`;
    await until(
      async () => ((await (await fetch(reservation, { headers: bearer(buyerToken(b.userId)) })).json()) as { status: string }).status,
      (status) => status === 'expired',
      60_000,
    );
    const after = await b.status();
    expect(after.body).toMatchObject({ state: 'used', position: null, admittedUntil: null });
    expect(Number(after.retryAfter)).toBe(3600);
    expect(await b.purchase()).toMatchObject({ status: 403, body: { code: 'NOT_ADMITTED' } });
  });

  it('a turn that ran out is recorded abandoned (score 0) and only then said `expired`; one without any record is never `expired`', async () => {
    const url = system.gateways[0]!.url;
    const prefix = system.ctx.config.REDIS_PREFIX;
    const { id } = await createQueuedSale(system.ctx, url, { stock: 1, admitPerSecond: 50, admissionTtlSeconds: 1, startsIn: 1000 });
    const [walker, next] = [doorBuyer(url, id, 'walks-away'), doorBuyer(url, id, 'comes-next')];
    expect((await walker.join()).status).toBe(200);
    await walker.waitFor('admitted');
    expect((await next.join()).status).toBe(200);
    await next.waitFor('admitted', 30_000);
    expect(await system.ctx.redis.zscore(saleKeys(prefix, id).turns, walker.userId)).toBe('0');
    expect((await walker.status()).body).toMatchObject({ state: 'expired', admittedUntil: null });

    // The door's record of the turn gone (as a store that went back loses it): the buyer is told to ask
    // again shortly, not that it is over.
    await system.ctx.redis.zrem(saleKeys(prefix, id).turns, walker.userId);
    const unknown = await walker.status();
    expect(unknown.body).toMatchObject({ state: 'waiting', position: null });
    expect(Number(unknown.retryAfter)).toBe(2);
  });
});
