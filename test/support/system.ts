import {
  createHttpClient,
  spawnGateway,
  spawnReconciler,
  spawnWorker,
  startFaultProxy,
  startRedisCluster,
  startRedisSentinels,
  startRedisServer,
  type AppProcess,
  type FaultProxy,
  type RedisCluster,
  type RedisSentinels,
  type RedisServer,
} from '@flashsale/harness';
import { createIsolatedContext, type TestContext } from './context.ts';

export interface SystemOptions {
  /** Redis persistence of the system's own redis-server; none by default. */
  appendfsync?: 'always' | 'everysec';
  gateways?: number;
  workers?: number;
  reconciler?: boolean;
  /** Route the workers' MySQL connections through a proxy the test can cut. */
  workerDbProxy?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Added to the gateways' environment only (a skewed clock, say). */
  gatewayEnv?: NodeJS.ProcessEnv;
  /** Added to the reconciler's environment only. */
  reconcilerEnv?: NodeJS.ProcessEnv;
  /** Reconcilers to start (default 1, none when `reconciler` is false). */
  reconcilers?: number;
}

export interface System {
  ctx: TestContext;
  redisServer: RedisServer;
  dbProxy: FaultProxy | undefined;
  gateways: (AppProcess & { url: string })[];
  workers: AppProcess[];
  reconciler: AppProcess | undefined;
  /** Every reconciler started (the first is `reconciler`). */
  reconcilers: AppProcess[];
  env: NodeJS.ProcessEnv;
  createSale(sale: { stock: number; perUserLimit?: number; endsInMs?: number; paymentWindowSeconds?: number }): Promise<number>;
  /** Starts one more worker, with `env` added to the workers' environment (its Redis through a proxy, say). */
  addWorker(env?: NodeJS.ProcessEnv): Promise<AppProcess>;
  stop(): Promise<void>;
}

/**
 * The whole system as real processes around a redis-server and a database of the test's own, so the
 * test may kill any of them. Timings are shortened (claim idle 1 s, watch every 200 ms) to keep fault
 * tests quick; the behaviour is the production code's.
 */
export async function startSystem(options: SystemOptions = {}): Promise<System> {
  const redisServer = await startRedisServer(options.appendfsync ? { appendfsync: options.appendfsync } : {});
  return assemble({ REDIS_URL: redisServer.url }, () => redisServer.stop(), options, { redisServer });
}

/** A system whose processes know only REDIS_CLUSTER_NODES: every Redis command goes to a real cluster. */
export interface ClusterSystem extends Omit<System, 'redisServer'> {
  cluster: RedisCluster;
}

/** startSystem on a real Redis Cluster of the test's own (3 masters, replicas on request). */
export async function startClusterSystem(
  options: Omit<SystemOptions, 'appendfsync'> & { masters?: number; replicasPerMaster?: number } = {},
): Promise<ClusterSystem> {
  const cluster = await startRedisCluster({ masters: options.masters ?? 3, replicasPerMaster: options.replicasPerMaster ?? 0 });
  // REDIS_URL points nowhere: a process that used it rather than the cluster would fail, not pass.
  const system = await assemble(
    { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_URL: 'redis://127.0.0.1:1' },
    () => cluster.stop(),
    options,
    {},
  );
  return Object.assign(system, { cluster });
}

/** A system whose processes know only REDIS_SENTINELS: they find the primary through real sentinels. */
export interface SentinelSystem extends Omit<System, 'redisServer'> {
  sentinels: RedisSentinels;
}

/** startSystem on a primary, 2 replicas and 3 sentinels of the test's own (AOF always on every server). */
export async function startSentinelSystem(options: Omit<SystemOptions, 'appendfsync'> = {}): Promise<SentinelSystem> {
  // Down after 5 s: long enough that a primary starved of CPU on a busy machine is not failed over for it.
  const sentinels = await startRedisSentinels({ appendfsync: 'always', downAfterMs: 5000 });
  // REDIS_URL points nowhere: a process that used it rather than the sentinels would fail, not pass.
  const redisEnv = { REDIS_SENTINELS: sentinels.seeds, REDIS_SENTINEL_MASTER: sentinels.masterName, REDIS_URL: 'redis://127.0.0.1:1' };
  const system = await assemble(redisEnv, () => sentinels.stop(), options, {});
  return Object.assign(system, { sentinels });
}

async function assemble(
  redisEnv: NodeJS.ProcessEnv,
  stopRedis: () => Promise<void>,
  options: SystemOptions,
  extra: { redisServer?: RedisServer },
): Promise<System> {
  const ctx = await createIsolatedContext(redisEnv);
  let dbProxy: FaultProxy | undefined;
  const env: NodeJS.ProcessEnv = {
    ...redisEnv,
    REDIS_PREFIX: ctx.config.REDIS_PREFIX,
    DATABASE_URL: ctx.config.DATABASE_URL,
    WORKER_CLAIM_IDLE_MS: '1000',
    RECONCILER_WATCH_MS: '200',
    RECONCILER_PUBLISH_GRACE_MS: '0',
    AUDIT_EVERY_MS: '1000',
    RATE_LIMIT_PER_SECOND: '1000',
    ...options.env,
  };
  const workerEnv = { ...env };
  if (options.workerDbProxy) {
    dbProxy = await startFaultProxy(Number(new URL(ctx.config.DATABASE_URL).port || 3306));
    const proxied = new URL(ctx.config.DATABASE_URL);
    proxied.port = String(dbProxy.port);
    workerEnv.DATABASE_URL = proxied.toString();
  }
  const processes: AppProcess[] = [];
  const track = async <T extends AppProcess>(started: Promise<T>) => {
    const p = await started;
    processes.push(p);
    return p;
  };
  const system: System = {
    ctx,
    redisServer: extra.redisServer as RedisServer,
    dbProxy,
    env,
    gateways: [],
    workers: [],
    reconciler: undefined,
    reconcilers: [],
    async createSale({ stock, perUserLimit = 1, endsInMs = 3_600_000, paymentWindowSeconds }) {
      const admin = createHttpClient(system.gateways[0]!.url, 1);
      const res = await admin.send('POST', '/api/admin/sales', {
        headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` },
        body: {
          name: 'Fault test',
          stock,
          perUserLimit,
          startsAt: new Date(Date.now() - 60_000).toISOString(),
          endsAt: new Date(Date.now() + endsInMs).toISOString(),
          ...(paymentWindowSeconds !== undefined && { paymentWindowSeconds }),
        },
      });
      admin.close();
      if (res.status !== 201) throw new Error(`creating the sale failed: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.id as number;
    },
    async addWorker(extra = {}) {
      const worker = await track(spawnWorker({ ...workerEnv, ...extra }));
      system.workers.push(worker);
      return worker;
    },
    async stop() {
      await Promise.all(processes.map((p) => p.kill('SIGKILL')));
      await dbProxy?.close();
      await ctx.close().catch(() => undefined);
      await stopRedis();
    },
  };
  try {
    // Every process starts at once (each is a few seconds of CPU to load), as a deployment's do: none
    // waits for another. All are waited for, failed or not, so that a failure stops every one that did
    // start. Each list keeps its index order.
    const gatewayCount = options.gateways ?? 1;
    const workerCount = options.workers ?? 1;
    const started = await Promise.allSettled([
      ...Array.from({ length: gatewayCount }, () => track(spawnGateway({ ...env, ...options.gatewayEnv }))),
      ...Array.from({ length: workerCount }, () => track(spawnWorker(workerEnv))),
      ...Array.from({ length: (options.reconciler ?? true) ? (options.reconcilers ?? 1) : 0 }, () =>
        track(spawnReconciler({ ...env, ...options.reconcilerEnv })),
      ),
    ]);
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    const all = started.map((s) => (s as PromiseFulfilledResult<AppProcess>).value);
    system.gateways = all.slice(0, gatewayCount) as (AppProcess & { url: string })[];
    system.workers.push(...all.slice(gatewayCount, gatewayCount + workerCount));
    system.reconcilers.push(...all.slice(gatewayCount + workerCount));
    system.reconciler = system.reconcilers[0];
  } catch (error) {
    await system.stop();
    throw error;
  }
  return system;
}
