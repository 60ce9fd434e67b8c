import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { createLiveSale, createTestContext, type TestContext } from '../support/context.ts';
import {
  startFaultProxy,
  type FaultProxy,
  ledgerOf,
  ordersOf,
  pendingCount,
  spawnApp,
  spawnWorker,
  type AppProcess,
} from '@flashsale/harness';

// Real worker processes, killed with SIGKILL at an exact point of their conversation with Redis or
// MariaDB: a proxy in front of the server sees the command go out and kills the worker before it lands.

let ctx: TestContext;
let proxy: FaultProxy | undefined;
let processes: AppProcess[];

beforeEach(() => {
  ctx = createTestContext();
  processes = [];
  proxy = undefined;
});
afterEach(async () => {
  await Promise.all(processes.map((p) => p.kill('SIGKILL')));
  await proxy?.close();
  await ctx.close();
});

async function acceptedReservations(saleId: number, count: number) {
  const accepted = new Map<string, { userId: string; quantity: number }>();
  for (let i = 0; i < count; i++) {
    const reservationId = newReservationId(saleId);
    const outcome = await ctx.store.reserve({
      saleId,
      userId: `buyer-${i}`,
      quantity: 1,
      reservationId,
    });
    expect(outcome.kind).toBe('reserved');
    accepted.set(reservationId, { userId: `buyer-${i}`, quantity: 1 });
  }
  return accepted;
}

/** Puts a fault proxy in front of MariaDB (kept in `proxy` for the test to cut) and returns its DATABASE_URL. */
async function proxiedDatabase(onClientData?: (chunk: Buffer) => 'forward' | 'drop'): Promise<string> {
  proxy = await startFaultProxy(Number(new URL(ctx.config.DATABASE_URL).port || 3306), onClientData);
  const proxied = new URL(ctx.config.DATABASE_URL);
  proxied.port = String(proxy.port);
  return proxied.toString();
}

/**
 * A worker whose process handle exists before it can say a word: the entries are on the stream before it
 * starts, so it may reach the crash point before it logs "worker started", and the proxy must be able to
 * kill it there.
 */
function spawnDoomedWorker(env: NodeJS.ProcessEnv): AppProcess {
  return spawnApp('worker', { WORKER_PORT: '0', ...env });
}

function workerEnv(overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    REDIS_PREFIX: ctx.config.REDIS_PREFIX,
    DATABASE_URL: ctx.config.DATABASE_URL,
    REDIS_URL: ctx.config.REDIS_URL,
    WORKER_CLAIM_IDLE_MS: '500',
    ...overrides,
  };
}

describe('a worker killed mid-batch', () => {
  it('killed between the MySQL commit and the XACK: the redelivered batch creates no duplicate', async () => {
    const sale = await createLiveSale(ctx, { stock: 100 });
    const accepted = await acceptedReservations(sale.id, 40);
    let doomed: AppProcess | undefined = undefined;
    let killed = false;
    const redisPort = Number(new URL(ctx.config.REDIS_URL).port || 6379);
    proxy = await startFaultProxy(redisPort, (chunk) => {
      if (killed || !/\r\nxack\r\n/i.test(chunk.toString('latin1'))) return 'forward';
      killed = true;
      doomed?.child.kill('SIGKILL');
      return 'drop';
    });
    doomed = spawnDoomedWorker(workerEnv({ REDIS_URL: `redis://127.0.0.1:${proxy.port}` }));
    processes.push(doomed);

    expect(await doomed.exited).toBe('SIGKILL');
    // The crash point: the batch is committed in MySQL, and still pending in Redis.
    expect((await ordersOf(ctx.prisma, sale.id)).length).toBe(40);
    expect(await pendingCount(ctx.store, sale.id)).toBe(40);

    const survivor = await spawnWorker(workerEnv());
    processes.push(survivor);
    await ctx.store.sale(sale.id).waitForDrain();

    const ledger = await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted);
    expect(ledger).toEqual({ lost: [], duplicated: [], unexpected: [], unitsInDb: 40, remaining: 60, stock: 100 });
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).soldUnits).toBe(40);
    await survivor.waitForLog({
      matches: (l) => l.msg === 'redelivered entries were already orders' && l.replayed === 40,
      what: '"redelivered entries were already orders" with replayed 40',
    });
  });

  it('killed before the MySQL commit: its entries are left to another worker, which writes them once', async () => {
    const sale = await createLiveSale(ctx, { stock: 100 });
    const accepted = await acceptedReservations(sale.id, 40);
    let doomed: AppProcess | undefined = undefined;
    let killed = false;
    // The batch's write is one call that commits in MySQL (write_new_orders): the worker dies as it sends
    // the statement that carries the batch's rows, which MySQL then never runs.
    const ids = [...accepted.keys()];
    const proxiedDb = await proxiedDatabase((chunk) => {
      if (killed || !ids.some((id) => chunk.includes(id))) return 'forward';
      killed = true;
      doomed?.child.kill('SIGKILL');
      return 'drop';
    });
    doomed = spawnDoomedWorker(workerEnv({ DATABASE_URL: proxiedDb }));
    processes.push(doomed);

    expect(await doomed.exited).toBe('SIGKILL');
    // The crash point: the transaction never committed; the entries are pending on the dead consumer.
    expect((await ordersOf(ctx.prisma, sale.id)).length).toBe(0);
    expect(await pendingCount(ctx.store, sale.id)).toBe(40);

    const survivor = await spawnWorker(workerEnv());
    processes.push(survivor);
    await ctx.store.sale(sale.id).waitForDrain();

    const ledger = await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted);
    expect(ledger).toEqual({ lost: [], duplicated: [], unexpected: [], unitsInDb: 40, remaining: 60, stock: 100 });
    await survivor.waitForLog({
      matches: (l) => l.msg === 'took over entries left pending by another consumer' && l.entries === 40,
      what: '"took over entries left pending by another consumer" with entries 40',
    });
  });

  it('on SIGTERM finishes and acknowledges the batch in hand, then exits 0', async () => {
    const sale = await createLiveSale(ctx, { stock: 100 });
    const accepted = await acceptedReservations(sale.id, 30);
    const worker = await spawnWorker(workerEnv());
    processes.push(worker);
    await ctx.store.sale(sale.id).waitForDrain();
    expect(await worker.kill('SIGTERM')).toBe(0);
    const totals = await worker.waitForLog('worker totals');
    expect(totals).toMatchObject({ written: 30, replayed: 0, deadLettered: 0 });
    const ledger = await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted);
    expect(ledger.lost).toEqual([]);
  });
});

describe('MySQL unreachable', () => {
  it('the worker retries with backoff, keeps the entries pending, and writes them all once MySQL is back', async () => {
    const sale = await createLiveSale(ctx, { stock: 100 });
    const proxiedDb = await proxiedDatabase();
    const worker = await spawnWorker(workerEnv({ DATABASE_URL: proxiedDb, WORKER_CLAIM_IDLE_MS: '60000' }));
    processes.push(worker);

    proxy!.cut();
    const accepted = await acceptedReservations(sale.id, 25);
    await worker.waitForLog({
      matches: (l) => l.msg === 'order batch failed' && l.mysqlUp === false && l.attempt === 2,
      what: '"order batch failed" with mysqlUp false at attempt 2',
    });
    expect((await ordersOf(ctx.prisma, sale.id)).length).toBe(0);
    // Nothing acknowledged: every entry is either held by the worker retrying it, or not yet read.
    const backlog = await ctx.store.sale(sale.id).backlog();
    expect(backlog.pending + backlog.lag).toBe(25);
    expect(backlog.pending).toBeGreaterThan(0);

    proxy!.restore();
    await ctx.store.sale(sale.id).waitForDrain();
    const ledger = await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted);
    expect(ledger).toEqual({ lost: [], duplicated: [], unexpected: [], unitsInDb: 25, remaining: 75, stock: 100 });
    expect(worker.logs.filter((l) => l.msg === 'entry moved to the dead-letter stream')).toEqual([]);
    // What an operator sees on the worker's /metrics: the failed attempts, then every order written.
    const { port } = await worker.waitForLog('worker started');
    const metrics = await (await fetch(`http://127.0.0.1:${String(port)}/metrics`)).text();
    expect(metrics).toMatch(/^flashsale_worker_orders_written_total 25$/m);
    expect(Number(/^flashsale_worker_write_failures_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2);
    expect(metrics).toMatch(/^flashsale_worker_entries_held 0$/m);
  });
});

describe('a batch held through a long MySQL outage', () => {
  it('stays with the worker retrying it: no other worker takes it over, no delivery is counted', async () => {
    const sale = await createLiveSale(ctx, { stock: 100 });
    const proxiedDb = await proxiedDatabase();
    proxy!.cut();
    const holder = await spawnWorker(workerEnv({ DATABASE_URL: proxiedDb, WORKER_CLAIM_IDLE_MS: '1000', WORKER_MAX_DELIVERIES: '2' }));
    processes.push(holder);
    const accepted = await acceptedReservations(sale.id, 20);
    await holder.waitForLog('order batch failed');
    // A second worker that could reach MySQL would take idle entries over after 1 s.
    const other = await spawnWorker(workerEnv({ WORKER_CLAIM_IDLE_MS: '1000', WORKER_MAX_DELIVERIES: '2' }));
    processes.push(other);
    await new Promise((resolve) => setTimeout(resolve, 4000));
    const pending = (await ctx.redis.xpending(`${ctx.config.REDIS_PREFIX}:{s${sale.id}}:stream`, 'order-writers', '-', '+', 100)) as [
      string,
      string,
      number,
      number,
    ][];
    expect(new Set(pending.map(([, consumer]) => consumer)).size).toBe(1);
    expect(pending.every(([, , , deliveries]) => deliveries === 1)).toBe(true);

    proxy!.restore();
    await ctx.store.sale(sale.id).waitForDrain();
    const ledger = await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted);
    expect(ledger).toEqual({ lost: [], duplicated: [], unexpected: [], unitsInDb: 20, remaining: 80, stock: 100 });
    expect(
      [...holder.logs, ...other.logs].filter(
        (l) => l.msg === 'entry moved to the dead-letter stream' || l.msg === 'took over entries left pending by another consumer',
      ),
    ).toEqual([]);
  });
});

describe('a worker whose metrics port is taken', () => {
  it('says so and writes every order anyway', async () => {
    const sale = await createLiveSale(ctx, { stock: 10 });
    const squatter = createServer().listen(0);
    await once(squatter, 'listening');
    try {
      const taken = (squatter.address() as AddressInfo).port;
      const worker = await spawnWorker(workerEnv({ WORKER_PORT: String(taken) }));
      processes.push(worker);
      const accepted = await acceptedReservations(sale.id, 5);
      await ctx.store.sale(sale.id).waitForDrain();

      expect(
        worker.logs.find((l) => l.msg === 'metrics port unavailable: this worker serves no /metrics (give it its own WORKER_PORT)'),
      ).toMatchObject({ port: taken });
      expect(await ledgerOf(ctx.store, ctx.prisma, sale.id, accepted)).toEqual({
        lost: [],
        duplicated: [],
        unexpected: [],
        unitsInDb: 5,
        remaining: 5,
        stock: 10,
      });
    } finally {
      squatter.close();
    }
  });
});
