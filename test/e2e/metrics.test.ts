import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, mergeBursts, purchaseBurst, spawnGateway, spawnReconciler, spawnWorker, type AppProcess } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';
import { sampleOf, scrape, seriesWithLabel } from '../support/metrics-text.ts';
import { until } from '../support/until.ts';
import { createSaleStore } from '@flashsale/redis-store';

// The metrics as an operator reads them: real gateway, worker and reconciler processes on a redis-server
// and a database of the test's own, scraped on their metrics ports.

let system: System;
beforeAll(async () => {
  // Retired as soon as ended and drained, so a sale's series can be seen to go within the test.
  system = await startSystem({ env: { RECONCILER_RETIRE_AFTER_END_MS: '0' } });
});
afterAll(async () => {
  await system?.stop();
});

const prefix = () => system.ctx.config.REDIS_PREFIX;

describe('the metrics of a running system', () => {
  it('count a real burst by outcome exactly as the buyers were answered, and the orders the worker wrote', async () => {
    const gateway = system.gateways[0]!;
    const saleId = await system.createSale({ stock: 40 });
    const buyers = Array.from({ length: 60 }, (_, i) => `metrics-buyer-${i}`);
    const first = await purchaseBurst(gateway.url, saleId, buyers, { connections: 16 });
    // The same buyers again: each is told ALREADY_PURCHASED or SOLD_OUT, never a second reservation.
    const again = await purchaseBurst(gateway.url, saleId, buyers.slice(0, 10), { connections: 4 });
    const answers = mergeBursts(first, again);
    await createSaleStore(system.ctx.redis, prefix()).sale(saleId).waitForDrain();

    const text = await scrape(gateway);

    expect(answers.failed.size + answers.unknown.size).toBe(0);
    expect(answers.accepted.size).toBe(40);
    expect(sampleOf(text, 'flashsale_purchases_total{outcome="reserved"}')).toBe(40);
    for (const [code, count] of Object.entries(answers.refused))
      expect(sampleOf(text, `flashsale_purchases_total{outcome="${code}"}`)).toBe(count);
    // Nothing counted that was not answered: the outcomes add up to the 70 requests.
    const counted = text
      .split('\n')
      .filter((line) => line.startsWith('flashsale_purchases_total{'))
      .reduce((sum, line) => sum + Number(line.split(' ')[1]), 0);
    expect(counted).toBe(70);
    expect(sampleOf(text, 'flashsale_purchase_duration_seconds_count')).toBe(70);
    // Every accept ran the script; refusals learnt from the verdict cache did not.
    expect(sampleOf(text, 'flashsale_reserve_script_duration_seconds_count')).toBeGreaterThanOrEqual(40);
    expect(sampleOf(text, 'flashsale_reserve_script_duration_seconds_count')).toBeLessThanOrEqual(70);
    expect(sampleOf(text, 'flashsale_redis_errors_total')).toBe(0);
    expect(sampleOf(text, 'flashsale_mysql_errors_total')).toBe(0);

    const worker = await scrape(system.workers[0]!);
    expect(sampleOf(worker, 'flashsale_worker_orders_written_total')).toBe(40);
    // Every reason is exported from the start, at 0: an alert on increase() sees the first dead letter.
    expect(sampleOf(worker, 'flashsale_worker_dead_letters_total{reason="OVER_STOCK"}')).toBe(0);
    expect(sampleOf(worker, 'flashsale_worker_dead_letters_total{reason="STALE_GENERATION"}')).toBe(0);
    expect(sampleOf(worker, 'flashsale_redis_errors_total')).toBe(0);
    expect(sampleOf(worker, 'flashsale_mysql_errors_total')).toBe(0);

    // The reconciler's next look at the sale after the drain exports it as it now stands: sold out, drained,
    // balanced. A look taken after the last reserve and before any worker read shows remaining 0 and
    // pending 0 with the whole burst still in the lag: the look waited for has neither left.
    const reconciler = system.reconciler!;
    const sale = `{sale_id="${saleId}"}`;
    const seen = await until(
      () => scrape(reconciler),
      (t) =>
        sampleOf(t, `flashsale_sale_remaining_units${sale}`) === 0 &&
        sampleOf(t, `flashsale_stream_pending_entries${sale}`) === 0 &&
        sampleOf(t, `flashsale_stream_lag_entries${sale}`) === 0,
    );
    expect(sampleOf(seen, `flashsale_sale_stock_units${sale}`)).toBe(40);
    expect(sampleOf(seen, `flashsale_stream_lag_entries${sale}`)).toBe(0);
    expect(sampleOf(seen, `flashsale_sale_paused${sale}`)).toBe(0);
    expect(sampleOf(seen, `flashsale_audit_drift_units${sale}`)).toBe(0);
    expect(sampleOf(seen, 'flashsale_lost_reservations_total')).toBe(0);
  });

  it("show a paused sale, count the reconciliation that takes it up, and drop the sale's series once it retires", async () => {
    const other = await system.createSale({ stock: 5 });
    const saleId = await system.createSale({ stock: 5, endsInMs: 5000 });
    const burst = await purchaseBurst(system.gateways[0]!.url, saleId, ['retiring-a', 'retiring-b', 'retiring-c']);
    expect(burst.accepted.size).toBe(3);
    const reconciler = system.reconciler!;
    const sale = `{sale_id="${saleId}"}`;
    await until(
      () => scrape(reconciler),
      (t) => sampleOf(t, `flashsale_sale_remaining_units${sale}`) === 2 && sampleOf(t, `flashsale_stream_lag_entries${sale}`) === 0,
    );

    // Paused behind the reconciler's back, as a reconciliation that died would leave it: seen paused,
    // then taken up again (reason "interrupted"), rebuilt and resumed.
    expect(await createSaleStore(system.ctx.redis, prefix()).sale(saleId).setPaused(true)).toBe(true);
    await until(
      () => scrape(reconciler),
      (t) => sampleOf(t, `flashsale_sale_paused${sale}`) === 1,
    );
    const resumed = await until(
      () => scrape(reconciler),
      (t) =>
        sampleOf(t, 'flashsale_reconciliations_total{reason="interrupted"}') === 1 && sampleOf(t, `flashsale_sale_paused${sale}`) === 0,
    );
    expect(sampleOf(resumed, 'flashsale_reconciliation_duration_seconds_count')).toBe(1);
    expect(sampleOf(resumed, 'flashsale_lost_reservations_total')).toBe(0);

    // An operator's pause shows as paused too, and is no reason for a reconciliation.
    const control = (action: string) =>
      fetch(`${system.gateways[0]!.url}/api/admin/sales/${other}/${action}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${system.ctx.config.ADMIN_TOKEN}` },
      });
    expect((await control('pause')).status).toBe(200);
    await until(
      () => scrape(reconciler),
      (t) => sampleOf(t, `flashsale_sale_paused{sale_id="${other}"}`) === 1,
    );
    expect((await control('resume')).status).toBe(200);
    const afterResume = await until(
      () => scrape(reconciler),
      (t) => sampleOf(t, `flashsale_sale_paused{sale_id="${other}"}`) === 0,
    );
    expect(sampleOf(afterResume, 'flashsale_reconciliations_total{reason="interrupted"}')).toBe(1);

    // Ended (RECONCILER_RETIRE_AFTER_END_MS 0) and drained: every series of the sale goes; the other
    // sale, still live, keeps its own.
    const retired = await until(
      () => scrape(reconciler),
      (t) => seriesWithLabel(t, 'sale_id', String(saleId)).length === 0,
    );
    expect(
      seriesWithLabel(retired, 'sale_id', String(other))
        .map((line) => line.split('{')[0])
        .sort(),
    ).toEqual([
      'flashsale_audit_drift_units',
      'flashsale_sale_paused',
      'flashsale_sale_remaining_units',
      'flashsale_sale_stock_units',
      'flashsale_stream_lag_entries',
      'flashsale_stream_pending_entries',
    ]);
  });
});

describe('the store error counters', () => {
  const processes: AppProcess[] = [];
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGKILL')));
  });

  it('count Redis and MySQL failures in every process when neither store answers', async () => {
    // Ports nothing listens on: every connection is refused.
    const env = {
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      DATABASE_URL: `mysql://root@127.0.0.1:${await freePort()}/nowhere`,
      REDIS_PREFIX: `${prefix()}-away`,
      RECONCILER_WATCH_MS: '200',
    };
    const [gateway, worker, reconciler] = await Promise.all([spawnGateway(env), spawnWorker(env), spawnReconciler(env)]);
    processes.push(gateway, worker, reconciler);
    // MySQL first for a create: refused, answered 503, counted.
    const created = await fetch(`${gateway.url}/api/admin/sales`, {
      method: 'POST',
      headers: { authorization: `Bearer ${system.ctx.config.ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Nowhere',
        stock: 1,
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 60_000).toISOString(),
      }),
    });
    expect(created.status).toBe(503);

    // The statement fails once the pool gives up connecting, which can be after the request deadline
    // answered: it is counted all the same, once. The reconciler's watch lists the sales from MySQL
    // first: each pass that fails is counted.
    const failing = (t: string, name: string) => (sampleOf(t, name) ?? 0) > 0;
    const [gatewayText] = await Promise.all([
      until(
        () => scrape(gateway),
        (t) => failing(t, 'flashsale_redis_errors_total') && failing(t, 'flashsale_mysql_errors_total'),
      ),
      until(
        () => scrape(worker),
        (t) => failing(t, 'flashsale_redis_errors_total'),
      ),
      until(
        () => scrape(reconciler),
        (t) => failing(t, 'flashsale_redis_errors_total') && failing(t, 'flashsale_mysql_errors_total'),
      ),
    ]);
    expect(sampleOf(gatewayText, 'flashsale_mysql_errors_total')).toBe(1);
  });
});
