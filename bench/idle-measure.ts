/**
 * One measurement of `npm run bench:idle`: what a system with N live sales and no purchases costs, and
 * how long a 202 then takes to become an order. Everything is its own: a redis-server (so Redis's command
 * count and CPU are this system's alone, not those of whatever else shares the machine's Redis), a
 * database (the reconciler watches every sale of its database), a Redis prefix; one gateway, one worker,
 * one reconciler, as real processes in their default configuration.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection, type Connection } from 'mariadb';
import { Redis } from 'ioredis';
import { loadConfig } from '@flashsale/config';
import { migrate, poolConfigFromUrl } from '@flashsale/order-store';
import {
  createHttpClient,
  mapConcurrently,
  signBuyerTokens,
  redisEnvOf,
  spawnApp,
  startRedisServer,
  type AppProcess,
  type RedisServer,
} from '@flashsale/harness';
import { cpuSeconds } from './servers.ts';

export interface IdleOptions {
  /** Live sales to create. */
  sales: number;
  /** Length of the idle window. */
  seconds: number;
  /** Seconds to wait after the last create before the window (default: the reconciler's publish grace + 2 s). */
  settleSeconds: number;
  /** Creates in flight at once. */
  concurrency: number;
  /** Purchases made one at a time after the window, each on a random sale. */
  purchases: number;
  /** Pause between two purchases. */
  pauseMs: number;
  /** Progress lines go here. */
  log: (text: string) => void;
}

export interface IdleResult {
  sales: number;
  create: { seconds: number; perSecond: number; concurrency: number; retries: number };
  /** Sales in the published-sales set (what the workers discover) before the window. */
  publishedSales: number;
  settleSeconds: number;
  window: {
    seconds: number;
    loadAverageStart: number;
    loadAverageEnd: number;
    /** How busy the whole machine was over the window, % of all its cores. */
    machineBusyPercent: number;
    /** CPU the machine spent on anything but this system's processes and Redis over the window, % of one core: other tenants. */
    othersCpuPercent: number;
  };
  /** CPU (user + system) of each process over the window, % of one core. */
  cpuPercent: { worker: number; reconciler: number; gateway: number; redis: number };
  /** Time the worker's and the reconciler's threads waited for a core over the window, % of it (summed over threads). */
  cpuWaitPercent: { worker: number; reconciler: number };
  redis: {
    /** total_commands_processed over the window, per second, without the bench's own INFO. */
    commandsPerSecond: number;
    /** INFO commandstats over the window, per second (commands run by scripts and MULTI counted one by one), the busiest first. */
    commandsByName: Record<string, number>;
  };
  /** Sales the reconciler had written a checkpoint for by the end of the window (it watched them). */
  checkpointedSales: number;
  /** From each 202 to its order being in MySQL, in ms (looked for every 5 ms). */
  toOrder: { purchases: number; orders: number; medianMs: number; maxMs: number; samplesMs: number[]; statuses: Record<string, number> };
}

/** What a run holds that must be let go of, whatever happens: the bench calls it on failure and on a signal. */
export interface Teardown {
  (): Promise<void>;
}

const POLL_MS = 5;
const ORDER_TIMEOUT_MS = 30_000;

export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));

/** Busy and total jiffies of the whole machine, from /proc/stat's first line. */
function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, v) => sum + v, 0);
  // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}

/**
 * Seconds the threads of a process have spent runnable but waiting for a core (/proc/<pid>/task/<tid>/schedstat,
 * its second field, in ns). Over a window, it says how far a busy machine held the process back: a
 * process kept waiting does less of its periodic work, so its CPU figure understates its cost.
 */
function runQueueWaitSeconds(pid: number): number {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  return tasks.reduce((sum, tid) => {
    try {
      return sum + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1] ?? 0) / 1e9;
    } catch {
      return sum;
    }
  }, 0);
}

interface RedisSample {
  commands: number;
  cpuSeconds: number;
  byName: Map<string, number>;
}

async function sampleRedis(probe: Redis): Promise<RedisSample> {
  const text = await probe.info('all');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  const byName = new Map<string, number>();
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) byName.set(match[1]!, Number(match[2]));
  return { commands: field('total_commands_processed'), cpuSeconds: field('used_cpu_sys') + field('used_cpu_user'), byName };
}

/**
 * Creates the sales through the admin API (`stock` units each: enough for every purchase of the run
 * should they all land on one sale), `concurrency` at a time, each with an Idempotency-Key so a
 * retry (after a 5xx or a cut connection) never makes a second sale. Resolves with the ids and retries.
 */
async function createSales(
  url: string,
  adminToken: string,
  count: number,
  stock: number,
  concurrency: number,
  label: string,
  log: (text: string) => void,
): Promise<{ ids: number[]; retries: number }> {
  const client = createHttpClient(url, concurrency);
  const startsAt = new Date(Date.now() - 60_000).toISOString();
  const endsAt = new Date(Date.now() + 2 * 3_600_000).toISOString();
  let retries = 0;
  let done = 0;
  const started = performance.now();
  const progress = setInterval(
    () => log(`creating: ${done} of ${count} after ${((performance.now() - started) / 1000).toFixed(0)} s`),
    10_000,
  );
  try {
    const ids = await mapConcurrently(
      Array.from({ length: count }, (_, i) => i),
      concurrency,
      async (i) => {
        const body = { name: `${label} ${i}`, stock, perUserLimit: 1, startsAt, endsAt };
        const headers = { authorization: `Bearer ${adminToken}`, 'idempotency-key': `${label}-${i}` };
        for (let attempt = 1; ; attempt += 1) {
          let answer: { status: number; body: Record<string, unknown> };
          try {
            answer = await client.send('POST', '/api/admin/sales', { headers, body });
          } catch (err) {
            answer = { status: 0, body: { error: String(err) } };
          }
          if (answer.status === 201) {
            done += 1;
            return answer.body.id as number;
          }
          if ((answer.status !== 0 && answer.status < 500) || attempt === 5)
            throw new Error(`creating sale ${i} failed: ${answer.status} ${JSON.stringify(answer.body)}`);
          retries += 1;
          await sleep(200 * attempt);
        }
      },
    );
    return { ids, retries };
  } finally {
    clearInterval(progress);
    client.close();
  }
}

/** Waits until `reservationId` is an order in MySQL; resolves with the ms from `since`, or undefined after the timeout. */
async function waitForOrder(db: Connection, reservationId: string, since: number): Promise<number | undefined> {
  while (performance.now() - since < ORDER_TIMEOUT_MS) {
    const rows = await db.query<{ id: bigint }[]>('SELECT id FROM orders WHERE reservation_id = ?', [reservationId]);
    if (rows.length > 0) return performance.now() - since;
    await sleep(POLL_MS);
  }
  return undefined;
}

/**
 * Measures one N. `register` receives the teardown as soon as there is something to tear down, so that a
 * signal arriving mid-run can stop the processes and remove the database; the teardown is also run here
 * before returning or throwing, and runs only once.
 */
export async function measureIdle(options: IdleOptions, register: (teardown: Teardown | undefined) => void): Promise<IdleResult> {
  const { log } = options;
  const config = loadConfig();
  const id = randomBytes(3).toString('hex');
  const prefix = `idle-${id}`;
  const database = new URL(config.DATABASE_URL);
  database.pathname = `${database.pathname}_idle_${id}`;
  const databaseUrl = database.toString();

  const processes: AppProcess[] = [];
  let redisServer: RedisServer | undefined;
  let probe: Redis | undefined;
  let db: Connection | undefined;
  let databaseMade = false;
  let torn: Promise<void> | undefined;
  const teardown: Teardown = () =>
    (torn ??= (async () => {
      // SIGTERM, and SIGKILL for whatever has not exited 5 s later: nothing of an idle system is worth waiting for.
      await Promise.all(processes.map(async (p) => Promise.race([p.kill('SIGTERM'), sleep(5000).then(async () => p.kill('SIGKILL'))])));
      probe?.disconnect();
      await db?.end().catch(() => undefined);
      await redisServer?.stop().catch(() => undefined);
      if (databaseMade) {
        const { database: name, ...server } = poolConfigFromUrl(databaseUrl);
        const admin = await createConnection(server);
        await admin.query(`DROP DATABASE IF EXISTS \`${name}\``).finally(() => admin.end());
      }
    })());
  register(teardown);

  try {
    redisServer = await startRedisServer();
    databaseMade = true;
    await migrate(databaseUrl);
    // REDIS_CLUSTER_NODES and REDIS_SENTINELS emptied: one inherited from the bench's environment would take the processes elsewhere.
    const env = { ...redisEnvOf({ url: redisServer.url }), REDIS_PREFIX: prefix, DATABASE_URL: databaseUrl };
    // As the harness's spawnGateway/spawnWorker/spawnReconciler start them (ports of their own, the
    // per-address limit off), but each process is kept from the moment it exists, so the teardown stops
    // it even when it never gets ready.
    const start = async (app: 'gateway' | 'worker' | 'reconciler', appEnv: NodeJS.ProcessEnv, ready: string) => {
      const p = spawnApp(app, { ...appEnv, ...env });
      processes.push(p);
      return { process: p, line: await p.waitForLog(ready) };
    };
    const [started, worker, reconciler] = await Promise.all([
      start('gateway', { PORT: '0', METRICS_PORT: '0', RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0' }, 'gateway listening'),
      start('worker', { WORKER_PORT: '0' }, 'worker started').then((s) => s.process),
      start('reconciler', { RECONCILER_PORT: '0' }, 'reconciler started').then((s) => s.process),
    ]);
    const gateway = Object.assign(started.process, { url: `http://127.0.0.1:${String(started.line.port)}` });
    // The processes run `node --import tsx <main.ts>`: the pid is the app itself (cpuSeconds adds any children anyway).
    const pids = { gateway: gateway.child.pid!, worker: worker.child.pid!, reconciler: reconciler.child.pid! };
    log(
      `${options.sales} sales: redis-server ${redisServer.url}, database ${database.pathname.slice(1)}, prefix ${prefix}; pids ${JSON.stringify(pids)}`,
    );

    const createStarted = performance.now();
    const created = await createSales(
      gateway.url,
      config.ADMIN_TOKEN,
      options.sales,
      Math.max(10, options.purchases),
      options.concurrency,
      prefix,
      log,
    );
    const createSeconds = (performance.now() - createStarted) / 1000;
    log(
      `${options.sales} sales created in ${createSeconds.toFixed(1)} s (${Math.round(options.sales / createSeconds)}/s, ${options.concurrency} in flight, ${created.retries} retries); settling ${options.settleSeconds} s`,
    );
    await sleep(options.settleSeconds * 1000);

    probe = new Redis(redisServer.url, { lazyConnect: true });
    await probe.connect();
    const publishedSales = await probe.scard(`${prefix}:sales`);
    db = await createConnection(poolConfigFromUrl(databaseUrl));
    for (const [name, p] of Object.entries({ gateway, worker, reconciler })) {
      if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`the ${name} exited before the window`);
    }

    // The window: nothing but the bench's own INFO at the start (the one at the end is not counted in its own answer).
    const loadAverageStart = os.loadavg()[0]!;
    const machineBefore = machineTicks();
    const cpuBefore = { worker: cpuSeconds(pids.worker), reconciler: cpuSeconds(pids.reconciler), gateway: cpuSeconds(pids.gateway) };
    const waitBefore = { worker: runQueueWaitSeconds(pids.worker), reconciler: runQueueWaitSeconds(pids.reconciler) };
    const redisBefore = await sampleRedis(probe);
    const windowStarted = performance.now();
    await sleep(options.seconds * 1000);
    const redisAfter = await sampleRedis(probe);
    const windowSeconds = (performance.now() - windowStarted) / 1000;
    const cpuAfter = { worker: cpuSeconds(pids.worker), reconciler: cpuSeconds(pids.reconciler), gateway: cpuSeconds(pids.gateway) };
    const waitAfter = { worker: runQueueWaitSeconds(pids.worker), reconciler: runQueueWaitSeconds(pids.reconciler) };
    const machineAfter = machineTicks();
    const loadAverageEnd = os.loadavg()[0]!;
    const ownCommands = 1;

    const percent = (seconds: number) => round((seconds / windowSeconds) * 100);
    const cpuPercent = {
      worker: percent(cpuAfter.worker - cpuBefore.worker),
      reconciler: percent(cpuAfter.reconciler - cpuBefore.reconciler),
      gateway: percent(cpuAfter.gateway - cpuBefore.gateway),
      redis: percent(redisAfter.cpuSeconds - redisBefore.cpuSeconds),
    };
    const machineBusyPercent = ((machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.total - machineBefore.total)) * 100;
    const ours = cpuPercent.worker + cpuPercent.reconciler + cpuPercent.gateway + cpuPercent.redis;
    const commandsByName = Object.fromEntries(
      [...redisAfter.byName]
        .map(
          ([name, calls]) =>
            [name, (calls - (redisBefore.byName.get(name) ?? 0) - (name === 'info' ? ownCommands : 0)) / windowSeconds] as const,
        )
        .filter(([, perSecond]) => perSecond > 0)
        .sort((a, b) => b[1] - a[1])
        .map(([name, perSecond]) => [name, Math.round(perSecond)]),
    );
    const [{ checkpointed }] = await db.query<[{ checkpointed: bigint }]>(
      'SELECT COUNT(*) AS checkpointed FROM sales WHERE checkpoint_at IS NOT NULL',
    );

    const toOrder = await timePurchases(gateway.url, db, created.ids, options, prefix);
    log(
      `${options.sales} sales: ${toOrder.orders}/${toOrder.purchases} purchases became orders, 202 -> order median ${toOrder.medianMs} ms, max ${toOrder.maxMs} ms`,
    );

    return {
      sales: options.sales,
      create: {
        seconds: round(createSeconds, 2),
        perSecond: Math.round(options.sales / createSeconds),
        concurrency: options.concurrency,
        retries: created.retries,
      },
      publishedSales,
      settleSeconds: options.settleSeconds,
      window: {
        seconds: round(windowSeconds, 2),
        loadAverageStart: round(loadAverageStart, 2),
        loadAverageEnd: round(loadAverageEnd, 2),
        machineBusyPercent: round(machineBusyPercent),
        othersCpuPercent: round(Math.max(0, machineBusyPercent * os.availableParallelism() - ours)),
      },
      cpuPercent,
      cpuWaitPercent: {
        worker: percent(waitAfter.worker - waitBefore.worker),
        reconciler: percent(waitAfter.reconciler - waitBefore.reconciler),
      },
      redis: { commandsPerSecond: Math.round((redisAfter.commands - redisBefore.commands - ownCommands) / windowSeconds), commandsByName },
      checkpointedSales: Number(checkpointed),
      toOrder,
    };
  } finally {
    await teardown();
    register(undefined);
  }
}

/**
 * `purchases` purchases one at a time, each by a new buyer on a random sale, `pauseMs` apart; for each,
 * the time from its 202 to its order in MySQL (looked for every 5 ms by reservation id, on a connection
 * of the bench's own: the buyer's lookup API allows a buyer 10 a second), then one lookup through the
 * API, whose status is counted (`created` for an order; a purchase refused is counted as `purchase <status>`).
 */
async function timePurchases(
  url: string,
  db: Connection,
  saleIds: number[],
  options: IdleOptions,
  label: string,
): Promise<IdleResult['toOrder']> {
  const client = createHttpClient(url, 1);
  const buyers = Array.from({ length: options.purchases }, (_, i) => `${label}-buyer-${i}`);
  const tokens = signBuyerTokens(buyers);
  const samples: number[] = [];
  const statuses: Record<string, number> = {};
  try {
    for (let i = 0; i < options.purchases; i += 1) {
      if (i > 0) await sleep(options.pauseMs);
      const saleId = saleIds[Math.floor(Math.random() * saleIds.length)]!;
      const auth = { authorization: `Bearer ${tokens[i]!}` };
      const answer = await client.send('POST', `/api/sales/${saleId}/purchase`, { headers: auth });
      const accepted = performance.now();
      if (answer.status !== 202) {
        options.log(`purchase ${i} on sale ${saleId}: ${answer.status} ${JSON.stringify(answer.body)}`);
        statuses[`purchase ${answer.status}`] = (statuses[`purchase ${answer.status}`] ?? 0) + 1;
        continue;
      }
      const reservationId = answer.body.reservationId as string;
      const ms = await waitForOrder(db, reservationId, accepted);
      if (ms !== undefined) samples.push(round(ms));
      const lookup = await client.send('GET', `/api/reservations/${encodeURIComponent(reservationId)}`, { headers: auth });
      const status = lookup.status === 200 ? String(lookup.body.status) : `http ${lookup.status}`;
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  } finally {
    client.close();
  }
  return {
    purchases: options.purchases,
    orders: samples.length,
    medianMs: round(median(samples)),
    maxMs: samples.length > 0 ? Math.max(...samples) : Number.NaN,
    samplesMs: samples,
    statuses,
  };
}
