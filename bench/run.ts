/**
 * `npm run bench`: the gateway's purchase endpoint against a bare node:http + EVALSHA baseline, the
 * workers' drain against raw multi-row INSERTs, Redis fsync policies, and GATEWAY_WORKERS scaling; all
 * in one run on this machine, alternating A B A B, medians reported. Writes bench/results.json and the
 * results table of docs/BENCHMARKS.md.
 *
 * BENCH_SECONDS (5) per load run, BENCH_ROUNDS (3) alternations, BENCH_CONNECTIONS (64), BENCH_DRAIN_ROWS (20000),
 * BENCH_DRAIN_ROUNDS (5) alternations of the drain.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { loadConfig } from '@flashsale/config';
import { createRedis, publishSale, saleKeys, type ScriptedRedis } from '@flashsale/redis-store';
import { createPrisma, insertSale, migrate } from '@flashsale/order-store';
import { newReservationId } from '@flashsale/domain';
import { signBuyerTokens, startRedisServer } from '@flashsale/harness';
import { ensureServices } from '../infra/ensure-services.ts';
import { median, purchaseLoad, type LoadResult } from './load.ts';
import { peakRssMiB, startBaseline, startGatewayProcess, type BenchServer } from './servers.ts';
import { drainByWorker, drainRaw } from './drain.ts';
import { writeResults, type BenchResults } from './report.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const DRAIN_ROWS = Number(process.env.BENCH_DRAIN_ROWS ?? 20_000);
// A drain run takes about a second: more of them steady its median at little cost.
const DRAIN_ROUNDS = Number(process.env.BENCH_DRAIN_ROUNDS ?? 5);
const DUPLICATE_BUYERS = 20_000;

const config = loadConfig();
const prefix = `bench-${randomBytes(3).toString('hex')}`;
const env = { REDIS_PREFIX: prefix, BENCH_PREFIX: prefix, DATABASE_URL: config.DATABASE_URL, REDIS_URL: config.REDIS_URL };
const log = (text: string) => console.log(`[bench] ${text}`);

await ensureServices();
await migrate(config.DATABASE_URL);
const redis = createRedis(config.REDIS_URL);
const prisma = createPrisma(config.DATABASE_URL, 4);

// Enough buyers that no accept run meets one twice (each run gets a sale of its own).
const pool = Math.max(60_000, Math.ceil(SECONDS * 25_000));
const ids = Array.from({ length: pool }, (_, i) => `bench-buyer-${i}`);
const tokens = signBuyerTokens(ids, { secret: config.AUTH_SECRET });
const buyers = ids.map((id, i) => ({ id, token: tokens[i]! }));

type Path = 'accept' | 'sold_out' | 'duplicate';

/** A fresh sale set up for one path; returns its id and the buyers the load should cycle through. */
async function saleFor(path: Path, client: ScriptedRedis = redis): Promise<{ saleId: number; cycle: typeof buyers }> {
  const sale = await insertSale(prisma, {
    name: `${prefix} ${path}`,
    stock: path === 'sold_out' ? 1 : 100_000_000,
    perUserLimit: 1,
    startsAt: new Date(Date.now() - 60_000),
    endsAt: new Date(Date.now() + 3_600_000),
  });
  await publishSale(client, prefix, sale, sale.generation);
  const keys = saleKeys(prefix, sale.id);
  const prebuy = path === 'sold_out' ? ['someone'] : path === 'duplicate' ? ids.slice(0, DUPLICATE_BUYERS) : [];
  for (let start = 0; start < prebuy.length; start += 1000) {
    const pipeline = client.pipeline() as unknown as ScriptedRedis & { exec(): Promise<unknown> };
    for (const buyer of prebuy.slice(start, start + 1000)) void pipeline.reserve(keys.meta, keys.buyers, keys.stream, buyer, 1, newReservationId(sale.id));
    await pipeline.exec();
  }
  return { saleId: sale.id, cycle: path === 'duplicate' ? buyers.slice(0, DUPLICATE_BUYERS) : buyers };
}

async function measure(server: BenchServer, path: Path, client: ScriptedRedis = redis): Promise<LoadResult> {
  const { saleId, cycle } = await saleFor(path, client);
  const result = await purchaseLoad({ url: server.url, saleId, buyers: cycle, connections: CONNECTIONS, seconds: SECONDS });
  const keys = saleKeys(prefix, saleId);
  await client.del(keys.meta, keys.buyers, keys.stream);
  return result;
}

async function warmUp(server: BenchServer): Promise<void> {
  const { saleId } = await saleFor('accept');
  await purchaseLoad({ url: server.url, saleId, buyers, connections: CONNECTIONS, seconds: 1 });
  const keys = saleKeys(prefix, saleId);
  await redis.del(keys.meta, keys.buyers, keys.stream);
}

/** Runs each contender once per round, in turn (A B A B), and keeps every run. */
async function alternate<K extends string>(contenders: Record<K, () => Promise<LoadResult>>): Promise<Record<K, LoadResult[]>> {
  const runs = Object.fromEntries(Object.keys(contenders).map((k) => [k, [] as LoadResult[]])) as Record<K, LoadResult[]>;
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, run] of Object.entries(contenders) as [K, () => Promise<LoadResult>][]) {
      const result = await run();
      runs[name].push(result);
      log(`${name}: ${Math.round(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, statuses ${JSON.stringify(result.statuses)}`);
    }
  }
  return runs;
}

const summary = (runs: LoadResult[]) => ({
  rps: Math.round(median(runs.map((r) => r.rps))),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  runs: runs.map((r) => ({ rps: Math.round(r.rps), p50: r.p50, p99: r.p99, statuses: r.statuses, errors: r.errors })),
});

const stops: (() => Promise<unknown>)[] = [];
try {
  log(`prefix ${prefix}, ${SECONDS} s per run, ${ROUNDS} rounds, ${CONNECTIONS} connections`);
  const baseline = await startBaseline(env);
  stops.push(baseline.stop);
  const gateway = await startGatewayProcess(env, 1);
  stops.push(gateway.stop);
  await warmUp(baseline);
  await warmUp(gateway);

  const paths: Record<Path, { baseline: LoadResult[]; gateway: LoadResult[] }> = {} as never;
  for (const path of ['accept', 'sold_out', 'duplicate'] as const) {
    log(`path ${path}: baseline (a) vs gateway (b)`);
    paths[path] = await alternate({ baseline: () => measure(baseline, path), gateway: () => measure(gateway, path) });
  }
  const gatewayPeakRss = peakRssMiB(gateway.pid);
  const baselinePeakRss = peakRssMiB(baseline.pid);

  log('GATEWAY_WORKERS scaling, accept path');
  const cores = os.availableParallelism();
  const clustered = await startGatewayProcess(env, cores);
  stops.push(clustered.stop);
  await warmUp(clustered);
  const scaling = await alternate({ '1': () => measure(gateway, 'accept'), [String(cores)]: () => measure(clustered, 'accept') });
  await clustered.stop();
  await Promise.all([gateway.stop(), baseline.stop()]);

  log('Redis appendfsync always vs everysec, accept path, gateway');
  const fsync: Record<string, LoadResult[]> = {};
  {
    const servers = { always: await startRedisServer({ appendfsync: 'always' }), everysec: await startRedisServer({ appendfsync: 'everysec' }) };
    stops.push(() => servers.always.stop(), () => servers.everysec.stop());
    const clients = { always: createRedis(servers.always.url), everysec: createRedis(servers.everysec.url) };
    const gateways = {
      always: await startGatewayProcess({ ...env, REDIS_URL: servers.always.url }),
      everysec: await startGatewayProcess({ ...env, REDIS_URL: servers.everysec.url }),
    };
    await warmUp(gateways.always);
    await warmUp(gateways.everysec);
    Object.assign(fsync, await alternate({ always: () => measure(gateways.always, 'accept', clients.always), everysec: () => measure(gateways.everysec, 'accept', clients.everysec) }));
    await Promise.all([gateways.always.stop(), gateways.everysec.stop(), clients.always.quit(), clients.everysec.quit()]);
    await Promise.all([servers.always.stop(), servers.everysec.stop()]);
  }

  log(`drain of ${DRAIN_ROWS} reservations: one worker vs raw multi-row INSERTs`);
  const drain = { worker: [] as number[], raw: [] as number[] };
  for (let round = 0; round < DRAIN_ROUNDS; round += 1) {
    drain.worker.push(await drainByWorker(redis, prisma, env, prefix, DRAIN_ROWS));
    log(`worker: ${drain.worker.at(-1)!.toFixed(2)} s`);
    drain.raw.push(await drainRaw(prisma, config.DATABASE_URL, prefix, DRAIN_ROWS, config.WORKER_BATCH_SIZE));
    log(`raw: ${drain.raw.at(-1)!.toFixed(2)} s`);
  }

  const results: BenchResults = {
    date: new Date().toISOString(),
    machine: `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${cores} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
    node: process.version,
    command: 'npm run bench',
    settings: { seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS, drainRows: DRAIN_ROWS, drainRounds: DRAIN_ROUNDS },
    paths: Object.fromEntries(Object.entries(paths).map(([path, runs]) => [path, { baseline: summary(runs.baseline), gateway: summary(runs.gateway) }])) as BenchResults['paths'],
    scaling: Object.fromEntries(Object.entries(scaling).map(([workers, runs]) => [workers, summary(runs)])),
    fsync: { always: summary(fsync.always!), everysec: summary(fsync.everysec!) },
    drain: { workerSeconds: median(drain.worker), rawSeconds: median(drain.raw), workerRuns: drain.worker, rawRuns: drain.raw },
    peakRssMiB: { gateway: Math.round(gatewayPeakRss), baseline: Math.round(baselinePeakRss) },
  };
  writeResults(results);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await redis.quit();
  // The drain runs leave 120,000 orders behind; a database that grows with every run makes the next
  // run's raw baseline and workers slower (bigger indexes), so each run removes its own rows.
  const pattern = `${prefix} %`;
  await prisma.$executeRaw`DELETE orders FROM orders JOIN sales ON sales.id = orders.sale_id WHERE sales.name LIKE ${pattern}`;
  await prisma.$executeRaw`DELETE FROM sales WHERE name LIKE ${pattern}`;
  await prisma.$disconnect();
}
