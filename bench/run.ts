/**
 * `npm run bench`: the gateway's purchase endpoint against two node:http + EVALSHA baselines (bare, and
 * with an HS256 token check), the workers' drain against raw multi-row INSERTs, Redis fsync policies,
 * and GATEWAY_WORKERS scaling; then the scale parts: the reserve script alone on one Redis node
 * (pipelined calls, no HTTP), the same load over many sales on a 3-master cluster against one node, and
 * the drain by 1, 2 and 4 worker processes; and the reconciler's CPU while a sale takes a fixed rate (the
 * soak, paced). All in one run on this machine, contenders alternated
 * (A B C A B C), medians reported. The HTTP load comes from wrk when it is installed, from autocannon
 * otherwise (printed). Prints the tables; with --record, appends the run to bench/results.json and
 * writes the results and scale sections of docs/BENCHMARKS.md. --quick runs every part shorter and once.
 * The options and BENCH_* variables: bench/options.ts.
 */
import { describeReconcilerCost, measureReconcilerCost } from './reconciler-cost.ts';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { exitWithUsage, loadConfig, UsageError } from '@flashsale/config';
import { createRedis, createSaleStore, saleKeys, type ScriptedRedis } from '@flashsale/redis-store';
import { createPrisma, migrate } from '@flashsale/order-store';
import { gitRevision, startRedisCluster, startRedisServer } from '@flashsale/harness';
import { ensureServices } from '../infra/ensure-services.ts';
import { chooseLoadGenerator, median } from './load.ts';
import type { MeasureOptions, PartContext, Run } from './part-context.ts';
import { replicaWaitPart } from './replica-wait.ts';
import { doorPart } from './door.ts';
import { doorBotsPart } from './door-bots.ts';
import { neighboursPart } from './neighbours.ts';
import { readyPart } from './ready.ts';
import { cpuSeconds, peakRssMiB, startBaseline, startGatewayProcess, type BenchServer } from './servers.ts';
import { drainByWorker, drainByWorkers, drainRaw, startWorkerPool } from './drain.ts';
import { expiryByWorker } from './expiry.ts';
import { evenlySpreadSales, reservePathRun, spreadRun, type ReserveRun } from './reserve-load.ts';
import { callgrindAvailable, reserveInstructions, type ScriptInstructions } from './script-instructions.ts';
import { printResults, writeResults, type BenchResults } from './report.ts';
import type { PathName, ReserveSummary, Summary } from './summary.ts';
import { measurePipeline } from './pipeline.ts';
import { galeraPart } from './galera.ts';
import { benchBuyers, cycleOf, DUPLICATE_BUYERS, openPathSale } from './path-sale.ts';
import { BENCH_COMMAND, benchSettingsOf, type BenchSettings } from './options.ts';

const settings = ((): BenchSettings => {
  try {
    const read = benchSettingsOf(process.argv.slice(2), process.env);
    if (read !== 'help') return read;
    console.log(BENCH_COMMAND.usage);
    process.exit(0);
  } catch (error) {
    if (error instanceof UsageError) exitWithUsage(BENCH_COMMAND, error.message);
    throw error;
  }
})();
const SECONDS = settings.seconds;
const ROUNDS = settings.rounds;
const CONNECTIONS = settings.connections;
const DRAIN_ROWS = settings.drainRows;
const DRAIN_ROUNDS = settings.drainRounds;
const PARTS = settings.parts;
/** The reconciler part: purchases a second (paced) and seconds of load. */
const RECONCILER_RATE = settings.reconcilerRate;
const RECONCILER_SECONDS = settings.reconcilerSeconds;
const SCRIPT_SECONDS = settings.scriptSeconds;
// 100 calls a pipeline, two pipelines under way: the client builds and parses one while Redis runs the
// other. In a few trials on the (busy) 2-core box, deeper pipelines (500, 1000) or more of them (4, 8)
// gave no more calls per second.
const SCRIPT_BATCH = 100;
const SCRIPT_IN_FLIGHT = 2;
const CLUSTER_SALES = settings.clusterSales;
const DRAIN_SALES = settings.drainSales;

const config = loadConfig();
const load = chooseLoadGenerator();
const prefix = `bench-${randomBytes(3).toString('hex')}`;
const env = {
  REDIS_PREFIX: prefix,
  BENCH_PREFIX: prefix,
  DATABASE_URL: config.DATABASE_URL,
  REDIS_URL: config.REDIS_URL,
  AUTH_SECRET: config.AUTH_SECRET,
};
const log = (text: string) => console.log(`[bench] ${text}`);

await ensureServices();
await migrate(config.DATABASE_URL);
const redis = createRedis(config.REDIS_URL);
/** The prefix the run's servers are given, bound to `client`: the run's Redis, or a server of a part's own. */
const storeOn = (client: ScriptedRedis) => createSaleStore(client, env.REDIS_PREFIX);
const store = storeOn(redis);
const prisma = createPrisma(config.DATABASE_URL, 4);

// Enough buyers for the longest run (measure() checks that no accept run met one twice, and so does the
// pipeline part, whose runs are longer).
const longestRun = PARTS.has('pipeline') ? Math.max(SECONDS, settings.pipelineSeconds) : SECONDS;
const { ids, buyers } = benchBuyers(longestRun, config.AUTH_SECRET);

/** A fresh sale set up for one path (path-sale.ts). */
function saleFor(path: PathName, client: ScriptedRedis = redis): Promise<number> {
  return openPathSale(prisma, client, storeOn(client), path, ids, `${prefix} ${path}`);
}

/**
 * One load run of one path against one server, on a sale of its own, checked from Redis: on the accept
 * path every answer is a 2xx and every answered buyer holds a reservation (a buyer met twice would be
 * refused), on the other paths every answer is a refusal and nobody was added.
 */
async function measure(
  server: BenchServer,
  path: PathName,
  { client = redis, saleId: prepared, buyers: from = buyers, refusalsHoldReservations = false }: MeasureOptions = {},
): Promise<Run> {
  const saleId = prepared ?? (await saleFor(path, client));
  const keys = saleKeys(prefix, saleId);
  const holdersBefore = await client.hlen(keys.buyers);
  const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
  const cpuBefore = cpuSeconds(server.pid);
  const result = await load.run({
    url: server.url,
    saleId,
    buyers: from,
    cycle: cycleOf(path),
    connections: CONNECTIONS,
    seconds: SECONDS,
  });
  const cpuUsPerRequest = ((cpuSeconds(server.pid) - cpuBefore) * 1e6) / result.requests;
  const added = (await client.hlen(keys.buyers)) - holdersBefore;
  await client.del(keys.meta, keys.buyers, keys.stream);
  // wrk stops counting with requests still in flight: the server may have answered up to one per connection more.
  const held = refusalsHoldReservations ? result.ok + result.refused : result.ok;
  const expected =
    path === 'accept'
      ? (refusalsHoldReservations || result.refused === 0) && added >= held && added <= held + CONNECTIONS
      : result.ok === 0 && added === 0;
  if (!expected || result.errors > 0 || result.requests === 0) {
    throw new Error(
      `${path} against ${server.url}: ${result.ok} 2xx, ${result.refused} refused, ${result.errors} errors, ${added} buyers added; not what this path must answer`,
    );
  }
  return { ...result, cpuUsPerRequest, loadAverage };
}

/**
 * A run as long as a measured one, not kept: V8 optimises a server's hot functions over its first seconds
 * under load (measured on the gateway: 33 us of CPU per accepted request in a first 5 s run after a 1 s
 * warm-up, 23 us in every run after it).
 */
async function warmUp(server: BenchServer, client: ScriptedRedis = redis): Promise<void> {
  const saleId = await saleFor('accept', client);
  await load.run({ url: server.url, saleId, buyers, connections: CONNECTIONS, seconds: SECONDS });
  const keys = saleKeys(prefix, saleId);
  await client.del(keys.meta, keys.buyers, keys.stream);
}

/**
 * Runs each contender once per round, in turn, and keeps every run. Every other round runs them in the
 * reverse order (A B C, C B A, A B C, ...): on a box whose speed drifts, no contender always runs before
 * another, and neighbours stay neighbours, so a ratio of two of them compares runs seconds apart.
 */
async function alternate<K extends string>(contenders: Record<K, () => Promise<Run>>): Promise<Record<K, Run[]>> {
  const runs = Object.fromEntries(Object.keys(contenders).map((k) => [k, [] as Run[]])) as Record<K, Run[]>;
  const order = Object.entries(contenders) as [K, () => Promise<Run>][];
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, run] of round % 2 === 0 ? order : [...order].reverse()) {
      const result = await run();
      runs[name].push(result);
      const answers = result.statuses ? JSON.stringify(result.statuses) : `${result.ok} 2xx, ${result.refused} refused`;
      log(
        `${name}: ${Math.round(result.rps)} req/s, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${Math.round(result.cpuUsPerRequest)} us CPU/request, load average ${result.loadAverage}, ${answers}`,
      );
    }
  }
  return runs;
}

const summary = (runs: Run[]): Summary => ({
  rps: Math.round(median(runs.map((r) => r.rps))),
  p50: Number(median(runs.map((r) => r.p50)).toFixed(2)),
  p99: Number(median(runs.map((r) => r.p99)).toFixed(2)),
  cpuUsPerRequest: Number(median(runs.map((r) => r.cpuUsPerRequest)).toFixed(1)),
  runs: runs.map((r) => ({
    rps: Math.round(r.rps),
    p50: r.p50,
    p99: r.p99,
    cpuUsPerRequest: Number(r.cpuUsPerRequest.toFixed(1)),
    loadAverage: r.loadAverage,
    ok: r.ok,
    refused: r.refused,
    errors: r.errors,
    ...(r.statuses ? { statuses: r.statuses } : {}),
  })),
});

const results: BenchResults = {
  date: new Date().toISOString(),
  machine: `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
  node: process.version,
  command: [
    ...Object.entries(process.env)
      .filter(([name]) => name.startsWith('BENCH_'))
      .map(([name, value]) => `${name}=${value}`),
    'npm run bench',
    ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : []),
  ].join(' '),
  commit: gitRevision().commit,
  loadGenerator: load.name,
  settings: {
    seconds: SECONDS,
    rounds: ROUNDS,
    connections: CONNECTIONS,
    drainRows: DRAIN_ROWS,
    drainRounds: DRAIN_ROUNDS,
    scriptSeconds: SCRIPT_SECONDS,
    scriptBatch: SCRIPT_BATCH,
    scriptInFlight: SCRIPT_IN_FLIGHT,
    clusterSales: CLUSTER_SALES,
    drainSales: DRAIN_SALES,
  },
};

/** Runs each contender once per round, in turn, and keeps every result: alternate() for what is not an HTTP load run. */
async function inRounds<K extends string, R>(
  contenders: Record<K, () => Promise<R>>,
  describe: (result: R) => string,
): Promise<Record<K, R[]>> {
  const runs = Object.fromEntries(Object.keys(contenders).map((k) => [k, [] as R[]])) as Record<K, R[]>;
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, run] of Object.entries(contenders) as [K, () => Promise<R>][]) {
      const result = await run();
      runs[name].push(result);
      log(`${name}: ${describe(result)}`);
    }
  }
  return runs;
}

const loadAverageNow = () => Number(os.loadavg()[0]!.toFixed(2));
const describeReserve = (r: ReserveRun) =>
  `${Math.round(r.callsPerSecond)} calls/s, client ${r.clientCpuUs.toFixed(1)} us CPU/call, Redis ${r.redisScriptUs.toFixed(1)} us in the script and ${r.redisCpuUs.toFixed(1)} us CPU/call, load average ${r.loadAverage}`;
const reserveSummary = (runs: ReserveRun[]): ReserveSummary => ({
  callsPerSecond: Math.round(median(runs.map((r) => r.callsPerSecond))),
  clientCpuUs: Number(median(runs.map((r) => r.clientCpuUs)).toFixed(2)),
  redisScriptUs: Number(median(runs.map((r) => r.redisScriptUs)).toFixed(2)),
  redisCpuUs: Number(median(runs.map((r) => r.redisCpuUs)).toFixed(2)),
  runs: runs.map((r) => ({
    ...r,
    callsPerSecond: Math.round(r.callsPerSecond),
    clientCpuUs: Number(r.clientCpuUs.toFixed(2)),
    redisScriptUs: Number(r.redisScriptUs.toFixed(2)),
    redisCpuUs: Number(r.redisCpuUs.toFixed(2)),
  })),
});
/** Median of the rounds' ratios of `of` to `to` (the contenders of a round run back to back). */
const roundRatio = (of: number[], to: number[]) => Number(median(of.map((value, i) => value / to[i]!)).toFixed(3));

const stops: (() => Promise<unknown>)[] = [];
try {
  log(
    `load generator: ${load.name}; prefix ${prefix}, ${SECONDS} s per run, ${ROUNDS} rounds, ${CONNECTIONS} connections; parts ${[...PARTS].join(', ')}${settings.quick ? ' (--quick)' : ''}`,
  );
  // The gateway of the purchase and scaling parts, started only for them.
  const gateway = PARTS.has('purchase') || PARTS.has('scaling') ? await startGatewayProcess(env, 1) : undefined;
  if (gateway) {
    stops.push(gateway.stop);
    await warmUp(gateway);
  }

  if (gateway && PARTS.has('purchase')) {
    const bare = await startBaseline(env, 'none');
    const authenticated = await startBaseline(env, 'hs256');
    // The control: a second authenticated baseline, the same server as the first. Its ratio to the first,
    // round by round, is how far this box alone moves a ratio (accept path only).
    const control = await startBaseline(env, 'hs256');
    stops.push(bare.stop, authenticated.stop, control.stop);
    await warmUp(bare);
    await warmUp(authenticated);
    await warmUp(control);
    const paths = {} as NonNullable<BenchResults['paths']>;
    // Each round runs the contenders back to back: a round's ratio is the fairest on a box whose speed drifts.
    const roundRatios = (of: Run[], to: Run[]) => of.map((run, i) => Number((run.rps / to[i]!.rps).toFixed(3)));
    const ratios = (of: Run[], to: Run[]) => Number(median(of.map((run, i) => run.rps / to[i]!.rps)).toFixed(3));
    for (const path of ['accept', 'duplicate', 'sold_out'] as const) {
      const withControl = path === 'accept';
      log(
        `path ${path}: bare baseline,${withControl ? ' control (authenticated baseline, a second process),' : ''} authenticated baseline, gateway`,
      );
      const runs = await alternate({
        bare: () => measure(bare, path),
        ...(withControl ? { control: () => measure(control, path) } : {}),
        authenticated: () => measure(authenticated, path),
        gateway: () => measure(gateway, path),
      } as Record<'bare' | 'control' | 'authenticated' | 'gateway', () => Promise<Run>>);
      paths[path] = {
        bare: summary(runs.bare),
        authenticated: summary(runs.authenticated),
        gateway: summary(runs.gateway),
        ratios: {
          gatewayToAuthenticated: ratios(runs.gateway, runs.authenticated),
          gatewayToBare: ratios(runs.gateway, runs.bare),
          authenticatedToBare: ratios(runs.authenticated, runs.bare),
        },
        roundRatios: roundRatios(runs.gateway, runs.authenticated),
        ...(withControl ? { controlRoundRatios: roundRatios(runs.control, runs.authenticated) } : {}),
      };
    }
    results.paths = paths;
    results.peakRssMiB = {
      gateway: Math.round(peakRssMiB(gateway.pid)),
      bare: Math.round(peakRssMiB(bare.pid)),
      authenticated: Math.round(peakRssMiB(authenticated.pid)),
    };
    await Promise.all([bare.stop(), authenticated.stop(), control.stop()]);
  }

  if (gateway && PARTS.has('scaling')) {
    log('GATEWAY_WORKERS scaling, accept path');
    const cores = os.availableParallelism();
    const clustered = await startGatewayProcess(env, cores);
    stops.push(clustered.stop);
    await warmUp(clustered);
    const scaling = await alternate({ '1': () => measure(gateway, 'accept'), [String(cores)]: () => measure(clustered, 'accept') });
    await clustered.stop();
    results.scaling = Object.fromEntries(Object.entries(scaling).map(([workers, runs]) => [workers, summary(runs)]));
  }
  await gateway?.stop();

  if (PARTS.has('fsync')) {
    log('Redis appendfsync always vs everysec, accept path, gateway');
    const servers = {
      always: await startRedisServer({ appendfsync: 'always' }),
      everysec: await startRedisServer({ appendfsync: 'everysec' }),
    };
    stops.push(
      () => servers.always.stop(),
      () => servers.everysec.stop(),
    );
    const clients = { always: createRedis(servers.always.url), everysec: createRedis(servers.everysec.url) };
    const gateways = {
      always: await startGatewayProcess({ ...env, REDIS_URL: servers.always.url }),
      everysec: await startGatewayProcess({ ...env, REDIS_URL: servers.everysec.url }),
    };
    await warmUp(gateways.always);
    await warmUp(gateways.everysec);
    const fsync = await alternate({
      always: () => measure(gateways.always, 'accept', { client: clients.always }),
      everysec: () => measure(gateways.everysec, 'accept', { client: clients.everysec }),
    });
    await Promise.all([gateways.always.stop(), gateways.everysec.stop(), clients.always.quit(), clients.everysec.quit()]);
    await Promise.all([servers.always.stop(), servers.everysec.stop()]);
    results.fsync = { always: summary(fsync.always), everysec: summary(fsync.everysec) };
  }

  if (PARTS.has('drain')) {
    log(`drain of ${DRAIN_ROWS} reservations: one worker vs raw multi-row INSERTs`);
    const drain = { worker: [] as number[], raw: [] as number[] };
    for (let round = 0; round < DRAIN_ROUNDS; round += 1) {
      drain.worker.push(await drainByWorker(redis, store, prisma, env, DRAIN_ROWS));
      log(`worker: ${drain.worker.at(-1)!.toFixed(2)} s`);
      drain.raw.push(await drainRaw(prisma, config.DATABASE_URL, prefix, DRAIN_ROWS, config.WORKER_BATCH_SIZE));
      log(`raw: ${drain.raw.at(-1)!.toFixed(2)} s`);
    }
    results.drain = { workerSeconds: median(drain.worker), rawSeconds: median(drain.raw), workerRuns: drain.worker, rawRuns: drain.raw };
  }

  if (PARTS.has('expiry')) {
    log(`expiry of ${DRAIN_ROWS} unpaid orders against their drain, one worker, ${DRAIN_ROUNDS} rounds`);
    const runs: { drainSeconds: number; expirySeconds: number }[] = [];
    for (let round = 0; round < DRAIN_ROUNDS; round += 1) {
      const run = await expiryByWorker(redis, store, prisma, env, DRAIN_ROWS);
      runs.push({ drainSeconds: Number(run.drainSeconds.toFixed(3)), expirySeconds: Number(run.expirySeconds.toFixed(3)) });
      log(
        `drain ${Math.round(DRAIN_ROWS / run.drainSeconds)} orders/s, expiry ${Math.round(DRAIN_ROWS / run.expirySeconds)} orders expired and returned/s`,
      );
    }
    const drainRate = median(runs.map((r) => DRAIN_ROWS / r.drainSeconds));
    const expiryRate = median(runs.map((r) => DRAIN_ROWS / r.expirySeconds));
    results.expiry = { rows: DRAIN_ROWS, drainOrdersPerSecond: Math.round(drainRate), expiryOrdersPerSecond: Math.round(expiryRate), runs };
  }

  const reserveOptions = { seconds: SCRIPT_SECONDS, batch: SCRIPT_BATCH, inFlight: SCRIPT_IN_FLIGHT };
  if (PARTS.has('script')) {
    log(
      `the reserve script on one Redis node, no HTTP: pipelines of ${SCRIPT_BATCH} reserve calls, ${SCRIPT_IN_FLIGHT} under way, ${SCRIPT_SECONDS} s per run`,
    );
    const loadAverage = loadAverageNow();
    // A redis-server of the bench's own: INFO then counts this load alone, which the shared one would not.
    const server = await startRedisServer();
    stops.push(() => server.stop());
    const client = createRedis(server.url);
    const run = (path: PathName, seconds = SCRIPT_SECONDS) =>
      reservePathRun(client, [server.url], prefix, path, { ...reserveOptions, seconds, duplicateBuyers: DUPLICATE_BUYERS });
    await run('accept', 1);
    const runs = await inRounds(
      { accept: () => run('accept'), duplicate: () => run('duplicate'), sold_out: () => run('sold_out') },
      describeReserve,
    );
    await client.quit();
    await server.stop();
    // The same calls counted in instructions, which a shared VM's speed does not move (script-instructions.ts).
    let instructions: ScriptInstructions | undefined;
    if (callgrindAvailable()) {
      log(`the reserve script's instructions in redis-server under callgrind: ${settings.scriptCalls} calls per path, ${ROUNDS} rounds`);
      const counted = await reserveInstructions(prefix, { calls: settings.scriptCalls, rounds: ROUNDS });
      log(
        `instructions per call: ${(['accept', 'duplicate', 'sold_out'] as const).map((path) => `${path} ${counted.perCall[path]} (${counted.runs[path].join(', ')})`).join('; ')}`,
      );
      instructions = counted;
    } else {
      log("valgrind is not installed: the reserve script's instructions are not counted (apt-get install valgrind)");
    }
    results.script = {
      loadAverage,
      accept: reserveSummary(runs.accept),
      duplicate: reserveSummary(runs.duplicate),
      sold_out: reserveSummary(runs.sold_out),
      ...(instructions && { instructions }),
    };
  }

  if (PARTS.has('cluster')) {
    log(`${CLUSTER_SALES} sales, accepted reserve calls: a 3-master Redis Cluster against one redis-server`);
    const loadAverage = loadAverageNow();
    const single = await startRedisServer();
    stops.push(() => single.stop());
    const cluster = await startRedisCluster({ masters: 3 });
    stops.push(() => cluster.stop());
    const clients = {
      single: createRedis(single.url),
      cluster: createRedis({ clusterNodes: cluster.nodes.map(({ host, port }) => ({ host, port })) }),
    };
    const nodes = { single: [single.url], cluster: (await cluster.masters()).map((node) => node.url) };
    // The same sales on both: on the cluster, as many on each master.
    const sales = await evenlySpreadSales(cluster, prefix, CLUSTER_SALES);
    const run = (on: 'single' | 'cluster', seconds = SCRIPT_SECONDS) =>
      spreadRun(clients[on], nodes[on], prefix, sales.ids, { ...reserveOptions, seconds });
    await run('single', 1);
    await run('cluster', 1);
    const runs = await inRounds({ '1 node': () => run('single'), '3 masters': () => run('cluster') }, describeReserve);
    await Promise.all([clients.single.quit(), clients.cluster.quit()]);
    await Promise.all([single.stop(), cluster.stop()]);
    results.cluster = {
      loadAverage,
      sales: CLUSTER_SALES,
      single: reserveSummary(runs['1 node']),
      cluster: { ...reserveSummary(runs['3 masters']), salesPerMaster: sales.perMaster },
      ratio: roundRatio(
        runs['3 masters'].map((r) => r.callsPerSecond),
        runs['1 node'].map((r) => r.callsPerSecond),
      ),
    };
  }

  if (PARTS.has('workers')) {
    log(`drain of ${DRAIN_ROWS} reservations in ${DRAIN_SALES} sale(s) by 1, 2 and 4 worker processes`);
    const loadAverage = loadAverageNow();
    const pool = await startWorkerPool(redis, env, prefix, 4);
    stops.push(pool.stop);
    const run = async (workers: number) => {
      const runLoadAverage = loadAverageNow();
      const seconds = await drainByWorkers(redis, store, prisma, pool, { count: DRAIN_ROWS, sales: DRAIN_SALES, workers });
      return { seconds: Number(seconds.toFixed(3)), ordersPerSecond: Math.round(DRAIN_ROWS / seconds), loadAverage: runLoadAverage };
    };
    // The warm-up: every worker of the pool writes its first batches (JIT, Prisma's first queries).
    await run(4);
    const runs = await inRounds(
      { '1': () => run(1), '2': () => run(2), '4': () => run(4) },
      (r) => `${r.ordersPerSecond} orders/s (${r.seconds.toFixed(2)} s), load average ${r.loadAverage}`,
    );
    await pool.stop();
    const rate = (workers: '1' | '2' | '4') => runs[workers].map((r) => r.ordersPerSecond);
    results.drainWorkers = {
      loadAverage,
      rows: DRAIN_ROWS,
      sales: DRAIN_SALES,
      byWorkers: Object.fromEntries(
        (['1', '2', '4'] as const).map((workers) => [
          workers,
          { ordersPerSecond: Math.round(median(rate(workers))), seconds: median(runs[workers].map((r) => r.seconds)), runs: runs[workers] },
        ]),
      ),
      ratios: { twoToOne: roundRatio(rate('2'), rate('1')), fourToTwo: roundRatio(rate('4'), rate('2')) },
    };
  }

  if (PARTS.has('reconciler')) {
    log(
      `the reconciler's CPU per second of sale: the soak at ${RECONCILER_RATE} purchases/s for ${RECONCILER_SECONDS} s (bench/reconciler-cost.ts)`,
    );
    const loadAverage = loadAverageNow();
    const cost = measureReconcilerCost(RECONCILER_RATE, RECONCILER_SECONDS);
    log(describeReconcilerCost(cost));
    results.reconciler = { loadAverage, ...cost };
  }

  if (PARTS.has('pipeline')) {
    log(
      `the whole pipeline (bench/pipeline.ts): ${ROUNDS} rounds of closed loop, open loop at half its rate, gateway alone; ${settings.pipelineSeconds} s runs`,
    );
    if (!load.name.startsWith('wrk')) throw new Error('the pipeline part needs wrk on PATH');
    const profileDir = process.env.BENCH_PIPELINE_PROFILE || undefined;
    results.pipeline = await measurePipeline({
      seconds: settings.pipelineSeconds,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      buyers,
      authSecret: config.AUTH_SECRET,
      openRate: settings.pipelineRate,
      mariadbArgs: [],
      profileDir,
      against: process.env.BENCH_PIPELINE_AGAINST || undefined,
      log,
    });
  }
  // The parts in files of their own (bench/part-context.ts says what they are handed).
  const part: PartContext = {
    settings,
    config,
    env,
    prefix,
    redis,
    store,
    storeOn,
    prisma,
    buyers,
    log,
    stops,
    measure,
    alternate,
    summary,
    warmUp,
  };
  if (PARTS.has('replica-wait')) results.replicaWait = await replicaWaitPart(part);
  if (PARTS.has('door')) results.door = await doorPart(part);
  if (PARTS.has('door-bots')) results.doorBots = await doorBotsPart(part);
  if (PARTS.has('neighbours')) results.neighbours = await neighboursPart(part);
  if (PARTS.has('galera')) results.galera = await galeraPart(part);
  if (PARTS.has('ready')) results.ready = await readyPart(part);

  if (settings.record) writeResults(results);
  else {
    printResults(results);
    log('not recorded: bench/results.json and docs/BENCHMARKS.md are unchanged (--record to append and rewrite them)');
  }
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await store.deleteAllKeys();
  await redis.quit();
  // The drain runs leave 100,000 orders behind; a database that grows with every run makes the next
  // run's raw baseline and workers slower (bigger indexes), so each run removes its own rows.
  const pattern = `${prefix} %`;
  await prisma.$executeRaw`DELETE orders FROM orders JOIN sales ON sales.id = orders.sale_id WHERE sales.name LIKE ${pattern}`;
  await prisma.$executeRaw`DELETE stock_returns FROM stock_returns JOIN sales ON sales.id = stock_returns.sale_id WHERE sales.name LIKE ${pattern}`;
  await prisma.$executeRaw`DELETE FROM sales WHERE name LIKE ${pattern}`;
  await prisma.$disconnect();
}
