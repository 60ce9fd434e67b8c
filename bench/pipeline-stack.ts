import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from 'mariadb';
import { type SaleStore, type ScriptedRedis, createSaleStore } from '@flashsale/redis-store';
import { createPrisma, type PrismaClient } from '@flashsale/order-store';
import { spawnGateway, spawnReconciler, spawnWorker, type AppProcess } from '@flashsale/harness';
import { processTree, readProcesses } from '../loadtest/soak/sampler.ts';
import { PIPELINE_PROCESSES, type GatewayAloneRun, type PipelineProcess, type PipelineRun } from './pipeline-run.ts';
import { redisCommandCosts, statusCounter } from './pipeline-servers.ts';
import { runWrk, WRK_SCRIPTS } from './pipeline-wrk.ts';

/** The servers every stack of a pipeline run shares, and their pids (their CPU is counted for the stack under load). */
export interface SharedServers {
  redisPid: number;
  mariadbPid: number;
  redis: ScriptedRedis;
  redisUrl: string;
  db: Connection;
  mariadbUrl(database: string): string;
}

export interface StackOptions {
  name: string;
  commit: string;
  /** The checkout the processes run from, default this one. */
  root?: string;
  prefix: string;
  database: string;
  servers: SharedServers;
  buyersFile(needed: number): string;
  authSecret: string;
  connections: number;
  seconds: number;
  nodeOptions?: string;
}

/** One contender of the pipeline part: gateway, two workers, reconciler, and a gateway no worker reads. */
export interface Stack {
  name: string;
  commit: string;
  closed(): Promise<PipelineRun>;
  open(rate: number): Promise<PipelineRun>;
  alone(): Promise<GatewayAloneRun>;
  /** Stops (SIGSTOP) or resumes the stack's processes: a contender not under load takes no CPU. */
  pause(paused: boolean): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a stack on the shared servers, its database already migrated. */
export async function startStack(options: StackOptions): Promise<Stack> {
  const { servers, connections, seconds } = options;
  const { redis, db } = servers;
  // The stack's sales, and the gateway alone's on a prefix of their own.
  const store = createSaleStore(redis, options.prefix);
  const aloneStore = createSaleStore(redis, `${options.prefix}-alone`);
  const databaseUrl = servers.mariadbUrl(options.database);
  const prisma: PrismaClient = createPrisma(databaseUrl, 2);
  const env = {
    REDIS_PREFIX: store.prefix,
    REDIS_URL: servers.redisUrl,
    DATABASE_URL: databaseUrl,
    AUTH_SECRET: options.authSecret,
    ...(options.nodeOptions ? { NODE_OPTIONS: options.nodeOptions } : {}),
  };
  const apps: Partial<Record<PipelineProcess | 'gateway alone', AppProcess & { url?: string }>> = {};
  const track = async <A extends AppProcess>(name: PipelineProcess | 'gateway alone', started: Promise<A>): Promise<A> =>
    (apps[name] = await started);
  const all = await Promise.allSettled([
    track('gateway', spawnGateway(env, 'source', options.root)),
    track('gateway alone', spawnGateway({ ...env, REDIS_PREFIX: aloneStore.prefix }, 'source', options.root)),
    track('worker-1', spawnWorker(env, 'source', options.root)),
    track('worker-2', spawnWorker(env, 'source', options.root)),
    track('reconciler', spawnReconciler(env, 'source', options.root)),
  ]);
  let paused = false;
  const stop = async () => {
    for (const app of Object.values(apps)) for (const pid of processTree(app.child.pid!)) process.kill(pid, 'SIGCONT');
    await Promise.all(Object.values(apps).map((app) => app.kill('SIGTERM')));
    await prisma.$disconnect();
  };
  const failed = all.find((s) => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const gateway = apps.gateway as AppProcess & { url: string };
  const alone = apps['gateway alone'] as AppProcess & { url: string };

  // A sale's terms: ample stock, started a minute ago, an hour to go.
  const terms = () => ({
    name: 'pipeline',
    stock: 100_000_000,
    perUserLimit: 1,
    startsAt: Date.now() - 60_000,
    endsAt: Date.now() + 3_600_000,
  });
  // The rebuy rule a sale gets by default (its columns' defaults), which the gateway alone's sales copy.
  let rebuyRule: { maxOrdersPerBuyer: number; rebuyCooldownSeconds: number } | undefined;
  // The row is made with this checkout's client in the stack's database, which the other revision's
  // migrations made: only columns both schemas have are written and read back.
  const newSale = async () => {
    const sale = terms();
    const row = await prisma.sale.create({
      data: { ...sale, startsAt: new Date(sale.startsAt), endsAt: new Date(sale.endsAt), redisGeneration: randomUUID() },
      select: { id: true, redisGeneration: true, maxOrdersPerBuyer: true, rebuyCooldownSeconds: true },
    });
    rebuyRule = { maxOrdersPerBuyer: row.maxOrdersPerBuyer, rebuyCooldownSeconds: row.rebuyCooldownSeconds };
    await store.publish({ ...sale, id: row.id, rebuyRule }, row.redisGeneration!);
    return row.id;
  };
  // A sale's Redis state, off the workers' list and deleted.
  const forget = async (on: SaleStore, saleId: number) => {
    const inRedis = on.sale(saleId);
    await inRedis.retire();
    await redis.del(...(Object.values(inRedis.keys) as string[]));
  };
  // A run's sale is ended in MySQL, longer ago than the reconciler watches an ended sale, before its Redis
  // state is deleted: a live sale missing from Redis is one Redis lost, which the reconciler rebuilds
  // from MySQL (every buyer written back), and that work would be counted against the next run.
  const dropSale = async (saleId: number) => {
    await prisma.$executeRaw`UPDATE sales SET ends_at = NOW(3) - INTERVAL 2 DAY, starts_at = NOW(3) - INTERVAL 3 DAY WHERE id = ${saleId}`;
    await forget(store, saleId);
  };
  // The gateway alone's sales exist in Redis only, on a prefix nothing else reads: no MySQL row, which the
  // reconciler would take for a sale Redis lost. Their ids are far above the runs' own.
  let aloneSales = 0;
  const aloneSale = async () => {
    aloneSales += 1;
    const id = 1_000_000_000 + aloneSales;
    await aloneStore.publish({ ...terms(), id, ...(rebuyRule && { rebuyRule }) }, randomUUID());
    return id;
  };
  const pidsOf = (name: PipelineProcess): number[] => {
    if (name === 'redis-server') return [servers.redisPid];
    if (name === 'mariadbd') return [servers.mariadbPid];
    return processTree(apps[name]!.child.pid!);
  };
  const measured = PIPELINE_PROCESSES.filter((name) => name !== 'wrk');
  const cpuNow = () =>
    Object.fromEntries(measured.map((name) => [name, readProcesses(pidsOf(name))?.cpuSeconds ?? 0])) as Record<PipelineProcess, number>;
  const counters = async () => ({
    cpu: cpuNow(),
    redo: await statusCounter(db, 'Innodb_os_log_written'),
    binlog: await statusCounter(db, 'Binlog_bytes_written'),
    redis: await redis.info('commandstats'),
  });
  // A closed run may go at three times the fastest before it (the warm-up runs cold); an open one keeps
  // its pace. The first runs take the whole list.
  const fastest = { pipeline: 0, alone: 0 };
  const enough = (rate: number, paced = false) => (rate === 0 ? Number.MAX_SAFE_INTEGER : rate * seconds * (paced ? 1.2 : 3) + connections);

  const pipelineRun = async (targetRate?: number): Promise<PipelineRun> => {
    const saleId = await newSale();
    const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
    const before = await counters();
    const file = options.buyersFile(targetRate === undefined ? enough(fastest.pipeline) : enough(targetRate, true));
    const wrk = await runWrk(
      gateway.url,
      targetRate === undefined ? WRK_SCRIPTS.closed : WRK_SCRIPTS.open,
      [file, String(saleId), ...(targetRate === undefined ? [] : [String(targetRate)])],
      connections,
      seconds,
    );
    const loadSeconds = wrk.durationUs / 1e6;
    const inRedis = store.sale(saleId);
    const { lag, pending } = await inRedis.backlog();
    const drainStarted = performance.now();
    await inRedis.waitForDrain(300_000, 5);
    const drainSeconds = (performance.now() - drainStarted) / 1000;
    const after = await counters();
    const orders = await prisma.order.count({ where: { saleId } });
    const holders = await redis.hlen(inRedis.keys.buyers);
    const accepted = wrk.requests - wrk.errors.status;
    // wrk stops counting with requests in flight: up to one per connection more were accepted than it saw.
    // A refusal: a buyer met twice (the buyers file too short for the run) or a sale that broke.
    if (orders !== holders || orders < accepted || orders > accepted + connections || wrk.errors.status > 0) {
      throw new Error(
        `${options.name}: ${accepted} accepted, ${wrk.errors.status} refused, ${holders} buyers in Redis, ${orders} orders in MySQL`,
      );
    }
    const perOrder = (cpuSeconds: number) => Number(((cpuSeconds * 1e6) / orders).toFixed(1));
    const cpuUsPerOrder = Object.fromEntries(measured.map((name) => [name, perOrder(after.cpu[name] - before.cpu[name])])) as Record<
      PipelineProcess,
      number
    >;
    cpuUsPerOrder.wrk = perOrder(wrk.cpuSeconds);
    const pipeline = Number(measured.reduce((sum, name) => sum + cpuUsPerOrder[name], 0).toFixed(1));
    await dropSale(saleId);
    if (targetRate === undefined) fastest.pipeline = Math.max(fastest.pipeline, accepted / loadSeconds);
    return {
      loadAverage,
      ...(targetRate === undefined ? {} : { targetRate }),
      requests: wrk.requests,
      accepted,
      errors: wrk.errors.connect + wrk.errors.read + wrk.errors.write + wrk.errors.timeout,
      loadSeconds: Number(loadSeconds.toFixed(2)),
      acceptRate: Math.round(accepted / loadSeconds),
      p50: wrk.latencyUs.p50 / 1000,
      p99: wrk.latencyUs.p99 / 1000,
      backlogAtEnd: lag + pending,
      drainSeconds: Number(drainSeconds.toFixed(3)),
      sustainedRate: Math.round(orders / (loadSeconds + drainSeconds)),
      cpuUsPerOrder: { ...cpuUsPerOrder, pipeline, total: Number((pipeline + cpuUsPerOrder.wrk).toFixed(1)) },
      redoBytesPerOrder: Math.round((after.redo - before.redo) / orders),
      binlogBytesPerOrder: Math.round((after.binlog - before.binlog) / orders),
      redis: redisCommandCosts(before.redis, after.redis, orders),
    };
  };

  return {
    name: options.name,
    commit: options.commit,
    closed: () => pipelineRun(),
    open: (rate) => pipelineRun(rate),
    async alone() {
      const saleId = await aloneSale();
      const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
      const pids = processTree(alone.child.pid!);
      const before = readProcesses(pids)!.cpuSeconds;
      const wrk = await runWrk(
        alone.url,
        WRK_SCRIPTS.closed,
        [options.buyersFile(enough(fastest.alone)), String(saleId)],
        connections,
        seconds,
      );
      const cpu = readProcesses(pids)!.cpuSeconds - before;
      fastest.alone = Math.max(fastest.alone, wrk.requests / (wrk.durationUs / 1e6));
      await forget(aloneStore, saleId);
      if (wrk.errors.status > 0) throw new Error(`${options.name}, gateway alone: ${wrk.errors.status} refused`);
      return {
        loadAverage,
        rps: Math.round(wrk.requests / (wrk.durationUs / 1e6)),
        p50: wrk.latencyUs.p50 / 1000,
        p99: wrk.latencyUs.p99 / 1000,
        cpuUsPerRequest: Number(((cpu * 1e6) / wrk.requests).toFixed(1)),
      };
    },
    async pause(pause) {
      if (pause === paused) return;
      paused = pause;
      for (const app of Object.values(apps))
        for (const pid of processTree(app.child.pid!)) process.kill(pid, pause ? 'SIGSTOP' : 'SIGCONT');
      // Resumed processes catch up with their timers (and the workers with their claims) before a run is measured.
      if (!pause) await sleep(300);
    },
    stop,
  };
}
