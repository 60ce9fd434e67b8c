import { createLogger } from '@flashsale/runtime';
import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { SOURCE_NODE_ARGS, spawnInGroup } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP, salesIndexKey } from '@flashsale/redis-store/testing';
import { createLiveSale, isolatedContextPerTest } from '../../../test/support/context.ts';
import { startGateway } from '../../../test/support/gateway.ts';
import { startReconciler } from '../../../test/support/reconciler.ts';
import { until } from '../../../test/support/until.ts';
import { OrderWorker } from '../../worker/src/order-worker.ts';

const env = isolatedContextPerTest();

describe('the reconciler process', () => {
  it('notices a sale Redis lost and rebuilds it on its own', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 8 });
    const reconciler = await startReconciler(env.ctx);
    env.stops.push(reconciler.stop);
    const keys = saleKeys(env.ctx.config.REDIS_PREFIX, sale.id);
    await env.ctx.redis.del(keys.meta, keys.buyers, keys.stream);

    // The job reports after it has resumed the sale.
    await until(
      async () => reconciler.reconciled.length,
      (n) => n > 0,
    );
    const state = await env.ctx.store.sale(sale.id).state();

    expect(state).toMatchObject({ stock: 8, remaining: 8, paused: false });
    const record = await env.ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } });
    expect(state?.generation).toBe(record.redisGeneration);
    expect(reconciler.reconciled).toEqual([
      {
        saleId: sale.id,
        remaining: 8,
        buyers: 0,
        tookMs: reconciler.reconciled[0]?.tookMs,
        lost: { reservations: 0, units: 0 },
        judgement: 'lost',
        restored: { reservations: 0, units: 0 },
      },
    ]);
    const groups = (await env.ctx.redis.xinfo('GROUPS', keys.stream)) as unknown[][];
    expect(groups.map((g) => g[1])).toEqual([ORDER_WRITERS_GROUP]);
  });

  it.each(['meta', 'stream'] as const)(
    "goes on watching and auditing the other sales when one sale's %s key has the wrong type, and counts that sale's failures",
    async (poisoned) => {
      const bad = await createLiveSale(env.ctx, { stock: 5 });
      const good = await createLiveSale(env.ctx, { stock: 5 });
      const badKeys = saleKeys(env.ctx.config.REDIS_PREFIX, bad.id);
      // An operator's or a bug's write: the key now holds a string (every command of another type fails WRONGTYPE).
      await env.ctx.redis.del(badKeys[poisoned]);
      await env.ctx.redis.set(badKeys[poisoned], 'oops');
      await env.ctx.store.reserve({
        saleId: good.id,
        userId: 'a',
        quantity: 1,
        reservationId: newReservationId(good.id),
      });
      const reconciler = await startReconciler(env.ctx);
      env.stops.push(reconciler.stop);

      // The healthy sale gets its checkpoint and its audit; the poisoned one is reported on its own.
      await until(
        () => env.ctx.prisma.sale.findUniqueOrThrow({ where: { id: good.id } }),
        (s) => s.checkpointReservations === 1,
      );
      await until(
        async () => reconciler.audits.filter((a) => a.saleId === good.id).length,
        (n) => n > 0,
      );
      await until(
        async () => reconciler.saleErrors.length,
        (n) => n >= 2,
      );

      expect(new Set(reconciler.saleErrors.map((e) => e.saleId))).toEqual(new Set([bad.id]));
      expect(String(reconciler.saleErrors[0]!.error)).toContain('WRONGTYPE');
    },
  );

  it('takes up a sale left paused by a reconciliation that died, and resumes it', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 5 });
    // What a reconciler killed between its pause and its resume leaves behind, with no job left to finish it.
    await env.ctx.store.sale(sale.id).setPaused(true);
    const reconciler = await startReconciler(env.ctx);
    env.stops.push(reconciler.stop);

    // The job reports after it has resumed the sale.
    await until(
      async () => reconciler.reconciled.length,
      (n) => n > 0,
    );

    expect(await env.ctx.store.sale(sale.id).state()).toMatchObject({
      remaining: 5,
      paused: false,
    });
    expect(reconciler.reconciled.map((r) => r.saleId)).toEqual([sale.id]);
  });

  it('takes a sale that ended a minute ago and has drained out of the workers list, and keeps one still draining', async () => {
    const drained = await createLiveSale(env.ctx, { stock: 5, startsIn: -300_000, endsIn: -61_000 });
    const draining = await createLiveSale(env.ctx, { stock: 5, startsIn: -300_000, endsIn: -61_000 });
    // An entry still in the stream of the second (accepted before the end, not yet written).
    await env.ctx.redis.xadd(
      saleKeys(env.ctx.config.REDIS_PREFIX, draining.id).stream,
      '*',
      'r',
      newReservationId(draining.id),
      'u',
      'late',
      'q',
      '1',
      't',
      '0',
      'g',
      draining.generation,
    );
    const reconciler = await startReconciler(env.ctx);
    env.stops.push(reconciler.stop);

    const listed = await until(
      () => env.ctx.redis.smembers(salesIndexKey(env.ctx.config.REDIS_PREFIX)),
      (ids) => !ids.includes(String(drained.id)),
    );

    expect(listed).toEqual([String(draining.id)]);
  });

  it('notices Redis going back in time even when its counters have caught up since', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 5 });
    await env.ctx.store.reserve({
      saleId: sale.id,
      userId: 'a',
      quantity: 1,
      reservationId: newReservationId(sale.id),
    });
    const [[entryA]] = (await env.ctx.redis.xrange(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).stream, '-', '+')) as [
      [string, string[]],
    ];
    const worker = new OrderWorker(
      { sales: env.ctx.sales, logger: createLogger('w', 'silent') },
      { batchSize: 10, idleMs: 5, claimIdleMs: 500, maxDeliveries: 5, salesRefreshMs: 50, writesInFlight: 2 },
    );
    const reconciler = await startReconciler(env.ctx);
    env.stops.push(reconciler.stop);
    await until(
      () => env.ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } }),
      (s) => s.checkpointStreamId === entryA,
    );

    // Redis comes back from an older state (its entry for buyer a gone) and, before the next look,
    // accepts buyer b: buyers and accepted units are back at the checkpoint's figures.
    await reconciler.stop();
    env.stops.pop();
    const keys = saleKeys(env.ctx.config.REDIS_PREFIX, sale.id);
    await env.ctx.redis.xdel(keys.stream, entryA);
    await env.ctx.redis.hdel(keys.buyers, 'a');
    await env.ctx.redis.hincrby(keys.meta, 'remaining', 1);
    await env.ctx.store.reserve({
      saleId: sale.id,
      userId: 'b',
      quantity: 1,
      reservationId: newReservationId(sale.id),
    });
    worker.start();
    env.stops.push(() => worker.stop());
    const again = await startReconciler(env.ctx);
    env.stops.push(again.stop);

    await until(
      async () => again.reconciled,
      (r) => r.length > 0,
    );
    expect(again.reconciled[0]).toMatchObject({ saleId: sale.id, remaining: 4, buyers: 1, lost: { reservations: 1, units: 1 } });
  });

  it('audits every live sale on its schedule, reports confirmed drift, and reconciles the sale for it (reason drift) until it balances', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 8 });
    const reconciler = await startReconciler(env.ctx, { auditEveryMs: 150 });
    env.stops.push(reconciler.stop);
    await until(
      async () => reconciler.audits.filter((a) => a.saleId === sale.id),
      (a) => a.length > 0,
    );
    expect(reconciler.audits.find((a) => a.saleId === sale.id)).toMatchObject({ drift: 0, confirmed: false, remaining: 8 });

    // Redis claims a unit was taken that is neither in flight nor in MySQL.
    await env.ctx.redis.hincrby(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).meta, 'remaining', -1);
    const drifted = await until(
      async () => reconciler.audits.filter((a) => a.saleId === sale.id && a.confirmed),
      (a) => a.length > 0,
    );
    expect(drifted[0]).toMatchObject({ drift: -1, confirmed: true, remaining: 7, inFlightUnits: 0, unitsInDb: 0 });

    // The drift is judged, not only logged: a reconciliation rebuilds the sale from MySQL, and it balances.
    const [reconciled] = await until(
      async () => reconciler.reconciled.filter((r) => r.saleId === sale.id),
      (r) => r.length > 0,
    );
    expect(reconciled).toMatchObject({ saleId: sale.id, remaining: 8, buyers: 0, restored: { reservations: 0, units: 0 } });
    const gateway = await startGateway(env.ctx);
    env.stops.push(gateway.close);
    const stats = () =>
      fetch(`${gateway.url}/api/admin/sales/${sale.id}/stats`, { headers: { authorization: `Bearer ${env.ctx.config.ADMIN_TOKEN}` } }).then(
        (r) => r.json() as Promise<{ audit?: { drift: number } }>,
      );
    expect(await until(stats, (s) => s.audit?.drift === 0)).toMatchObject({ remaining: 8, audit: { drift: 0 } });
  });
});

describe('POST /api/admin/sales/:saleId/reconcile', () => {
  it('answers 200 with the rebuilt state once the reconciliation is done, 409 while one runs, 404 for no sale', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 6 });
    // An entry held by a consumer that died: the drain waits until a worker reclaims it (none runs here).
    await env.ctx.store.reserve({
      saleId: sale.id,
      userId: 'a',
      quantity: 1,
      reservationId: newReservationId(sale.id),
    });
    await env.ctx.redis.xreadgroup(
      'GROUP',
      ORDER_WRITERS_GROUP,
      'ghost',
      'COUNT',
      10,
      'STREAMS',
      saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).stream,
      '>',
    );
    const reconciler = await startReconciler(env.ctx, { publishGraceMs: 3_600_000 });
    env.stops.push(reconciler.stop);
    const gateway = await startGateway(env.ctx);
    env.stops.push(gateway.close);
    const reconcile = (saleId: number) =>
      fetch(`${gateway.url}/api/admin/sales/${saleId}/reconcile`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.ctx.config.ADMIN_TOKEN}` },
      });

    const first = reconcile(sale.id);
    await until(
      () => env.ctx.store.sale(sale.id).state(),
      (s) => s?.paused === true,
    );
    const second = await reconcile(sale.id);
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({ code: 'RECONCILE_IN_PROGRESS', jobId: `sale-${sale.id}` });

    // The dead consumer's entry settles, acknowledged with no order written for it: as if MySQL had lost
    // the order since. The reconciliation writes it again from Redis's record before the rebuild.
    await env.ctx.redis.xack(
      saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).stream,
      ORDER_WRITERS_GROUP,
      (await env.ctx.redis.xrange(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).stream, '-', '+'))[0]![0],
    );
    const done = await first;
    expect(done.status).toBe(200);
    const body = (await done.json()) as Record<string, unknown>;
    expect(body).toEqual({
      saleId: sale.id,
      remaining: 5,
      buyers: 1,
      tookMs: body.tookMs,
      lost: { reservations: 0, units: 0 },
      judgement: 'intact',
      restored: { reservations: 1, units: 1 },
    });
    expect(await env.ctx.store.sale(sale.id).state()).toMatchObject({
      paused: false,
      remaining: 5,
    });

    const missing = await reconcile(2_000_000_000);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'SALE_NOT_FOUND' });
  });
});

describe('npm run reconcile -- --sale <id>', () => {
  it('reconciles one sale as a one-shot process and prints the result', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 4 });
    await env.ctx.store.reserve({
      saleId: sale.id,
      userId: 'a',
      quantity: 1,
      reservationId: newReservationId(sale.id),
    });
    // The reservation is still in flight and no worker runs: the command must wait for it, so a worker
    // is started in this process once the command has paused the sale.
    const worker = new OrderWorker(
      { sales: env.ctx.sales, logger: createLogger('w', 'silent') },
      { batchSize: 10, idleMs: 5, claimIdleMs: 500, maxDeliveries: 5, salesRefreshMs: 50, writesInFlight: 2 },
    );
    env.stops.push(() => worker.stop());

    const running = runCli(['--sale', String(sale.id)]);
    await expect
      .poll(async () => (await env.ctx.store.sale(sale.id).state())?.paused, {
        timeout: 60_000,
      })
      .toBe(true);
    worker.start();
    const { stdout, code } = await running;

    expect(code).toBe(0);
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(result).toEqual({
      saleId: sale.id,
      remaining: 3,
      buyers: 1,
      tookMs: result.tookMs,
      lost: { reservations: 0, units: 0 },
      judgement: 'intact',
      restored: { reservations: 0, units: 0 },
    });
    expect(await env.ctx.store.sale(sale.id).state()).toMatchObject({
      paused: false,
      remaining: 3,
    });
  });

  it('refuses a missing or unknown sale with a non-zero exit', async () => {
    expect((await runCli([])).code).toBe(2);
    expect((await runCli(['--sale', '2000000000'])).code).toBe(1);
  });
});

function runCli(args: string[]): Promise<{ stdout: string; code: number | null }> {
  return new Promise((resolve) => {
    const child = spawnInGroup(process.execPath, [...SOURCE_NODE_ARGS, 'apps/reconciler/src/reconcile-cli.ts', ...args], {
      env: { ...process.env, REDIS_PREFIX: env.ctx.config.REDIS_PREFIX, DATABASE_URL: env.ctx.config.DATABASE_URL, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.once('exit', (code) => resolve({ stdout, code }));
  });
}
