import { once } from 'node:events';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { AUDIT_QUEUE, bullPrefix } from '@flashsale/jobs';
import {
  buyerToken,
  faultLedgerOf,
  freePort,
  signalGroup,
  spawnGateway,
  spawnReconciler,
  spawnWorker,
  startRedisServer,
  type AppProcess,
  type RedisServer,
} from '@flashsale/harness';
import { saleEventsChannel } from '@flashsale/redis-store';
import { createIsolatedContext, type TestContext } from '../support/context.ts';
import { bearer, expectProblem } from '../support/http.ts';
import { until } from '../support/until.ts';

// Every process started while Redis is down (its redis-server stopped, nothing listening on its port):
// each must listen at once and say it is not ready, answer buyers 503, and take up its work once Redis
// comes, without a restart.

const SHUTDOWN_TIMEOUT_MS = 30_000;

let redisServer: RedisServer | undefined;
let redisUp = false;
let ctx: TestContext | undefined;
const processes: AppProcess[] = [];
afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.kill('SIGKILL')));
  // The context's clean-up needs its Redis.
  if (redisServer && !redisUp) await redisServer.start();
  await ctx?.close();
  await redisServer?.stop();
  redisServer = undefined;
  redisUp = false;
  ctx = undefined;
});

interface Started {
  gateway: AppProcess & { url: string };
  worker: AppProcess;
  reconciler: AppProcess;
  /** Where each process answers /healthz and /readyz (the gateway on its buyers' port). */
  healthPorts: { gateway: string; worker: string; reconciler: string };
  /** How long after its spawn each first answered /healthz 200. */
  msToHealthz: number[];
}

/** A redis-server of the test's own, then stopped: its port refuses connections until it starts again. */
async function redisDown(): Promise<{ server: RedisServer; ctx: TestContext }> {
  const server = await startRedisServer();
  const context = await createIsolatedContext({ REDIS_URL: server.url });
  await server.kill('SIGKILL');
  return { server, ctx: context };
}

/** Spawns the three processes on ports chosen here, so /healthz is polled from the spawn on. */
async function startAll(context: TestContext): Promise<Started> {
  const [gatewayPort, workerPort, reconcilerPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const env = {
    REDIS_URL: context.config.REDIS_URL,
    REDIS_PREFIX: context.config.REDIS_PREFIX,
    DATABASE_URL: context.config.DATABASE_URL,
    WORKER_CLAIM_IDLE_MS: '1000',
    RECONCILER_WATCH_MS: '200',
    RECONCILER_PUBLISH_GRACE_MS: '0',
    AUDIT_EVERY_MS: '1000',
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    // A sold-out verdict is kept until the sale is announced changed (the first test's subject), never
    // dropped by age during the test.
    SALE_VERDICT_TTL_MS: '60000',
  };
  const healthPorts = {
    gateway: `http://127.0.0.1:${gatewayPort}`,
    worker: `http://127.0.0.1:${workerPort}`,
    reconciler: `http://127.0.0.1:${reconcilerPort}`,
  };
  const spawnedAt = Date.now();
  const track = async <T extends AppProcess>(spawned: Promise<T>) => {
    const p = await spawned;
    processes.push(p);
    return p;
  };
  const upAfter = async (base: string) => {
    await until(
      () =>
        fetch(`${base}/healthz`).then(
          (res) => res.status,
          () => 0,
        ),
      (status) => status === 200,
      60_000,
    );
    return Date.now() - spawnedAt;
  };
  const [gateway, worker, reconciler, ...msToHealthz] = await Promise.all([
    track(spawnGateway({ ...env, PORT: String(gatewayPort) })),
    track(spawnWorker({ ...env, WORKER_PORT: String(workerPort) })),
    track(spawnReconciler({ ...env, RECONCILER_PORT: String(reconcilerPort) })),
    upAfter(healthPorts.gateway),
    upAfter(healthPorts.worker),
    upAfter(healthPorts.reconciler),
  ]);
  return { gateway, worker, reconciler, healthPorts, msToHealthz };
}

async function readyz(base: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}/readyz`);
  return { status: res.status, body: await res.json() };
}

describe('gateway, worker and reconciler started while Redis is down', () => {
  it('listen at once, say they are not ready, answer purchases 503; once Redis comes they sell, write the orders and hear sale events, without a restart', async () => {
    ({ server: redisServer, ctx } = await redisDown());
    const prefix = ctx.config.REDIS_PREFIX;
    const started = await startAll(ctx);
    const { gateway, reconciler, healthPorts } = started;

    // Up without Redis: each health port answered while Redis was still down (it starts below), in
    // seconds on an idle machine (node and tsx take most of it); a process waiting for Redis never would.
    console.log(`health ports answered ${started.msToHealthz.join(', ')} ms after the spawn, Redis down`);
    for (const base of Object.values(healthPorts)) {
      expect(await readyz(base)).toEqual({ status: 503, body: { status: 'not_ready', checks: { redis: 'down', mysql: 'up' } } });
    }
    const token = buyerToken('early-buyer');
    const early = await fetch(`${gateway.url}/api/sales/1/purchase`, { method: 'POST', headers: bearer(token) });
    expect(early.headers.get('retry-after')).toBe('1');
    await expectProblem(early, 503, 'SERVICE_UNAVAILABLE', 'the sale cannot be reached right now, retry shortly');

    await redisServer.start();
    redisUp = true;

    // Ready, each of them, without a restart.
    for (const base of Object.values(healthPorts)) {
      expect(
        await until(
          () => readyz(base),
          (r) => r.status === 200,
          60_000,
        ),
      ).toEqual({ status: 200, body: { status: 'ready', checks: { redis: 'up', mysql: 'up' } } });
    }
    // The gateway subscribed to the sale events once Redis came; the reconciler set the audit's schedule.
    await gateway.waitForLog('sale events subscribed: verdict cache on');
    expect(await ctx.redis.pubsub('NUMSUB', saleEventsChannel(prefix))).toEqual([saleEventsChannel(prefix), 1]);
    const bull = new Redis(ctx.config.REDIS_URL, { maxRetriesPerRequest: null });
    const auditQueue = new Queue(AUDIT_QUEUE, { connection: bull, prefix: bullPrefix(prefix) });
    try {
      expect(
        await until(
          () => auditQueue.getJobSchedulersCount(),
          (n) => n === 1,
          60_000,
        ),
      ).toBe(1);
    } finally {
      await auditQueue.close();
      bull.disconnect();
    }

    // A sale created through the admin API sells its stock.
    const admin = { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const created = await fetch(`${gateway.url}/api/admin/sales`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({
        name: 'After Redis came',
        stock: 3,
        perUserLimit: 1,
        startsAt: new Date(Date.now() - 60_000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    });
    expect(created.status).toBe(201);
    const saleId = ((await created.json()) as { id: number }).id;
    const accepted = new Map<string, { userId: string; quantity: number }>();
    const purchase = async (userId: string) => {
      const res = await fetch(`${gateway.url}/api/sales/${saleId}/purchase`, { method: 'POST', headers: bearer(buyerToken(userId)) });
      if (res.status === 202)
        accepted.set(((await res.clone().json()) as { reservationId: string }).reservationId, { userId, quantity: 1 });
      return res;
    };
    expect([(await purchase('buyer-a')).status, (await purchase('buyer-b')).status]).toEqual([202, 202]);
    const lastUnit = await purchase('buyer-c');
    expect(lastUnit.status).toBe(202);

    // The verdict cache is on, which it is only while subscribed: the sale sold out, and once the gateway
    // has read its holders (in the background) it keeps the verdict. A pause made in Redis without an
    // announcement is then not seen: until then the reserve script answers 503 SALE_PAUSED, changing nothing.
    // The reconciler takes up a sale it sees paused with no reconciliation queued (reason interrupted),
    // and resumes it within a second or so: it is frozen meanwhile, so this pause stays the test's own.
    signalGroup(reconciler.child, 'SIGSTOP');
    try {
      await ctx.store.sale(saleId).setPaused(true);
      await expect.poll(async () => (await purchase('buyer-d')).status, { interval: 10, timeout: 60_000 }).toBe(410);
      await expectProblem(await purchase('buyer-d'), 410, 'SOLD_OUT');
      // Announced, as the reconciler announces every change: the verdict is dropped and Redis answers.
      // The verdict's TTL is a minute here, and this waits half of it: only the announcement can have dropped it.
      await ctx.store.sale(saleId).announceChanged();
      const paused = await until(
        () => purchase('buyer-d'),
        (res) => res.status === 503,
        30_000,
      );
      expect(paused.headers.get('retry-after')).toBe('2');
      await expectProblem(paused, 503, 'SALE_PAUSED');
      await ctx.store.sale(saleId).setPaused(false);
      await ctx.store.sale(saleId).announceChanged();
    } finally {
      signalGroup(reconciler.child, 'SIGCONT');
    }

    // The reconciler takes jobs: an operator's reconciliation, queued and awaited through the gateway.
    const reconciled = await fetch(`${gateway.url}/api/admin/sales/${saleId}/reconcile`, { method: 'POST', headers: admin });
    expect(reconciled.status).toBe(200);
    expect(await reconciled.json()).toMatchObject({ saleId, remaining: 0, buyers: 3 });

    // The worker wrote every 202 as one order.
    await ctx.store.sale(saleId).waitForDrain();
    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, accepted, new Set());
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect({ accepted: accepted.size, unitsInDb: ledger.unitsInDb, remaining: ledger.remaining }).toEqual({
      accepted: 3,
      unitsInDb: 3,
      remaining: 0,
    });
    // Nothing was lost, and the reconciler did not count the outage as a loss.
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } })).toMatchObject({
      soldUnits: 3,
      lostReservations: 0,
      lostUnits: 0,
    });
  });

  it('each exits 0 on SIGTERM while Redis is still down, within SHUTDOWN_TIMEOUT_MS', async () => {
    ({ server: redisServer, ctx } = await redisDown());
    const started = await startAll(ctx);
    // Commands waiting for Redis in each process: a purchase, a readiness probe, the loops' own.
    await fetch(`${started.gateway.url}/api/sales/1/purchase`, { method: 'POST', headers: bearer(buyerToken('waiting-buyer')) });
    for (const base of Object.values(started.healthPorts)) expect((await readyz(base)).status).toBe(503);

    const stops = await Promise.all(
      [started.gateway, started.worker, started.reconciler].map(async (p) => {
        const signalled = Date.now();
        const status = await p.kill('SIGTERM');
        const ms = Date.now() - signalled;
        // Its last log lines may still be on their way through the pipe when the exit is seen (and pino
        // may write them out of order at the exit: their order is not asserted).
        if (!p.child.stdout!.closed) await once(p.child.stdout!, 'close');
        return { status, ms, stopped: p.logs.some((l) => l.msg === 'stopped') };
      }),
    );

    // Exit code 0 is stop() having finished by itself: the deadline exits 1, and so does a failed stop.
    for (const stop of stops) expect({ status: stop.status, stopped: stop.stopped }).toEqual({ status: 0, stopped: true });
  });
});
