/**
 * BENCH_PARTS=pipeline: the whole pipeline as deployed on one box, its cost per order by process.
 *
 * A redis-server and a mariadbd of the part's own (the box's shared ones serve other work, which their
 * /proc figures would count), a gateway, two workers and a reconciler on them, and wrk -t1 on the accept
 * path, every request a new buyer of a sale with ample stock. Each round runs, back to back:
 * - closed: wrk at full speed (each connection sends its next purchase when the last is answered);
 * - open: arrivals at half the closed run's sustained rate, paced by bench/wrk/paced-purchase.lua;
 * - gateway alone: a second gateway on another Redis prefix, which no worker reads, under the closed load.
 * For the two pipeline runs the clock runs from the first request to the last order committed (the
 * stream's group with neither lag nor pending entries); the sustained rate is the orders over that time,
 * so a run whose workers fall behind pays for its backlog in the drain. CPU per order is each process's
 * /proc utime + stime over the same window divided by the orders; MariaDB's bytes per order are the
 * deltas of Innodb_os_log_written (redo) and Binlog_bytes_written.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createConnection, type Connection } from 'mariadb';
import { createRedis, publishSale, saleKeys, streamBacklog, waitForDrain, type ScriptedRedis } from '@flashsale/redis-store';
import { createPrisma, insertSale, migrate, type PrismaClient } from '@flashsale/order-store';
import { spawnGateway, spawnReconciler, spawnWorker, startMariaDbServer, startRedisServer, type AppProcess } from '@flashsale/harness';
import { processTree, readProcesses } from '../loadtest/soak/sampler.ts';
import { median } from './load.ts';
import { innodbSettingsOf, redisCommandCosts, type CommandCost } from './pipeline-servers.ts';

export const PIPELINE_PROCESSES = ['gateway', 'worker-1', 'worker-2', 'reconciler', 'redis-server', 'mariadbd', 'wrk'] as const;
export type PipelineProcess = (typeof PIPELINE_PROCESSES)[number];

export interface PipelineOptions {
  seconds: number;
  rounds: number;
  connections: number;
  buyers: { id: string; token: string }[];
  authSecret: string;
  /** The open loop's arrivals per second; default half of each round's closed run. */
  openRate?: number;
  /** mariadbd arguments beyond the harness's (InnoDB settings under test). */
  mariadbArgs: string[];
  /** A directory for --cpu-prof profiles of the gateway and workers, and performance_schema on: a profiling run, not figures to quote. */
  profileDir?: string;
  log(text: string): void;
}

export interface PipelineRun {
  loadAverage: number;
  targetRate?: number;
  requests: number;
  accepted: number;
  errors: number;
  loadSeconds: number;
  /** Accepted per second of load (the gateway's side). */
  acceptRate: number;
  p50: number;
  p99: number;
  /** Entries not yet written (lag + pending) when the load stopped, and the seconds until every one was. */
  backlogAtEnd: number;
  drainSeconds: number;
  /** Orders committed / (load + drain seconds). */
  sustainedRate: number;
  /** By process; `pipeline` sums every process but wrk (the system's own cost), `total` adds wrk. */
  cpuUsPerOrder: Record<PipelineProcess, number> & { pipeline: number; total: number };
  redoBytesPerOrder: number;
  binlogBytesPerOrder: number;
  redis: CommandCost[];
}

export interface GatewayAloneRun {
  loadAverage: number;
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerRequest: number;
}

export interface PipelineResults {
  loadAverage: number;
  seconds: number;
  rounds: number;
  connections: number;
  innodb: Record<string, string>;
  closed: PipelineSummary;
  open: PipelineSummary;
  gatewayAlone: { rps: number; p50: number; p99: number; cpuUsPerRequest: number; runs: GatewayAloneRun[] };
}

export type PipelineSummary = Omit<PipelineRun, 'loadAverage' | 'redis' | 'targetRate' | 'requests' | 'errors' | 'loadSeconds'> & { targetRate?: number; redis: CommandCost[]; runs: PipelineRun[] };

const WRK_SCRIPTS = { closed: fileURLToPath(new URL('./wrk/purchase.lua', import.meta.url)), open: fileURLToPath(new URL('./wrk/paced-purchase.lua', import.meta.url)) };

interface WrkOutcome {
  requests: number;
  durationUs: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p50: number; p99: number };
  cpuSeconds: number;
}

/** wrk under sh, whose `times` then prints wrk's CPU (user, system) once it has exited, when /proc no longer has it. */
function runWrk(url: string, script: string, args: string[], connections: number, seconds: number): Promise<WrkOutcome> {
  const wrkArgs = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url, '--', ...args];
  const child = spawn('sh', ['-c', 'wrk "$@"; status=$?; times >&2; exit $status', 'wrk', ...wrkArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      // `times`: the shell's own user and system time on one line, its children's on the next ("0m1.234s 0m0.567s").
      const children = err.trim().split('\n').at(-1) ?? '';
      const times = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
      if (code !== 0 || times.length !== 2) return reject(new Error(`wrk failed (${code}): ${out}\n${err}`));
      try {
        resolve({ ...(JSON.parse(out.trim().split('\n').at(-1) ?? '') as Omit<WrkOutcome, 'cpuSeconds'>), cpuSeconds: times[0]! + times[1]! });
      } catch {
        reject(new Error(`wrk printed no report:\n${out}\n${err}`));
      }
    });
  });
}

async function statusCounter(db: Connection, name: string): Promise<number> {
  const rows = await db.query<{ Value: string }[]>('SHOW GLOBAL STATUS LIKE ?', [name]);
  return Number(rows[0]?.Value ?? 0);
}

/** Runs the pipeline part: see the file's comment. */
export async function measurePipeline(options: PipelineOptions): Promise<PipelineResults> {
  const { log } = options;
  const stops: (() => Promise<unknown>)[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'bench-pipeline-'));
  stops.push(async () => rmSync(dir, { recursive: true, force: true }));
  try {
    const profiling = options.profileDir !== undefined;
    const redisServer = await startRedisServer();
    stops.push(() => redisServer.stop());
    const mariadb = await startMariaDbServer({ args: [...options.mariadbArgs, ...(profiling ? ['--performance-schema=ON'] : [])] });
    stops.push(() => mariadb.stop());
    const databaseUrl = mariadb.url('flashsale_bench');
    await migrate(databaseUrl);
    const redis = createRedis(redisServer.url);
    stops.push(() => redis.quit());
    const prisma: PrismaClient = createPrisma(databaseUrl, 2);
    stops.push(() => prisma.$disconnect());
    const db = await createConnection({ host: '127.0.0.1', port: mariadb.port, user: 'root', password: '', database: 'flashsale_bench' });
    stops.push(() => db.end());
    const innodb = await innodbSettingsOf(db);
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    const [pidRow] = await db.query<{ file: string }[]>('SELECT @@pid_file AS file');
    const mariadbPid = Number(readFileSync(pidRow!.file, 'utf8').trim());

    const prefix = 'pipeline';
    const env = {
      REDIS_PREFIX: prefix,
      REDIS_URL: redisServer.url,
      DATABASE_URL: databaseUrl,
      AUTH_SECRET: options.authSecret,
      ...(profiling ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${options.profileDir}`.trim() } : {}),
    };
    const apps: Record<string, AppProcess & { url?: string }> = {};
    const track = async <A extends AppProcess>(name: string, started: Promise<A>): Promise<A> => {
      const app = await started;
      apps[name] = app;
      stops.push(() => app.kill('SIGTERM'));
      return app;
    };
    const [gateway, alone] = await Promise.all([
      track('gateway', spawnGateway(env)),
      track('gateway alone', spawnGateway({ ...env, REDIS_PREFIX: `${prefix}-alone` })),
      track('worker-1', spawnWorker(env)),
      track('worker-2', spawnWorker(env)),
      track('reconciler', spawnReconciler(env)),
    ]);
    // wrk builds every request of its buyers file before the first is sent (bench/wrk/purchase.lua), some
    // microseconds of its CPU each: each run gets a file of the first buyers it may need, not all of them.
    const files = new Map<number, string>();
    const buyersFile = (needed: number): string => {
      const lines = Math.min(options.buyers.length, Math.ceil(needed / 10_000) * 10_000);
      let file = files.get(lines);
      if (!file) {
        file = join(dir, `buyers-${lines}.txt`);
        writeFileSync(file, options.buyers.slice(0, lines).map((buyer) => `${buyer.id} ${buyer.token}\n`).join(''));
        files.set(lines, file);
      }
      return file;
    };
    // A closed run may go at three times the fastest before it (the warm-up runs cold); an open one keeps
    // its pace. The first runs take the whole list.
    const fastest = { pipeline: 0, alone: 0 };
    const enough = (rate: number, paced = false) => (rate === 0 ? options.buyers.length : rate * options.seconds * (paced ? 1.2 : 3) + options.connections);

    const newSale = async (onPrefix: string) => {
      const sale = await insertSale(prisma, { name: 'pipeline', stock: 100_000_000, perUserLimit: 1, startsAt: new Date(Date.now() - 60_000), endsAt: new Date(Date.now() + 3_600_000) });
      await publishSale(redis, onPrefix, sale, sale.generation);
      return sale.id;
    };
    const pidsOf = (name: PipelineProcess): number[] => {
      if (name === 'redis-server') return [redisPid];
      if (name === 'mariadbd') return [mariadbPid];
      return processTree(apps[name]!.child.pid!);
    };
    const measured = PIPELINE_PROCESSES.filter((name) => name !== 'wrk');
    const cpuNow = () => Object.fromEntries(measured.map((name) => [name, readProcesses(pidsOf(name))?.cpuSeconds ?? 0])) as Record<PipelineProcess, number>;

    const pipelineRun = async (targetRate?: number): Promise<PipelineRun> => {
      const saleId = await newSale(prefix);
      const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
      const before = { cpu: cpuNow(), redo: await statusCounter(db, 'Innodb_os_log_written'), binlog: await statusCounter(db, 'Binlog_bytes_written'), redis: await redis.info('commandstats') };
      const file = buyersFile(targetRate === undefined ? enough(fastest.pipeline) : enough(targetRate, true));
      const wrk = await runWrk(gateway.url, targetRate === undefined ? WRK_SCRIPTS.closed : WRK_SCRIPTS.open, [file, String(saleId), ...(targetRate === undefined ? [] : [String(targetRate)])], options.connections, options.seconds);
      const loadSeconds = wrk.durationUs / 1e6;
      const { lag, pending } = await streamBacklog(redis, prefix, saleId);
      const drainStarted = performance.now();
      await waitForDrain(redis, prefix, saleId, 300_000, 5);
      const drainSeconds = (performance.now() - drainStarted) / 1000;
      const after = { cpu: cpuNow(), redo: await statusCounter(db, 'Innodb_os_log_written'), binlog: await statusCounter(db, 'Binlog_bytes_written'), redis: await redis.info('commandstats') };
      const orders = await prisma.order.count({ where: { saleId } });
      const holders = await redis.hlen(saleKeys(prefix, saleId).buyers);
      const accepted = wrk.requests - wrk.errors.status;
      // wrk stops counting with requests in flight: up to one per connection more were accepted than it saw.
      // A refusal: a buyer met twice (the buyers file too short for the run) or a sale that broke.
      if (orders !== holders || orders < accepted || orders > accepted + options.connections || wrk.errors.status > 0) {
        throw new Error(`pipeline run: ${accepted} accepted, ${wrk.errors.status} refused, ${holders} buyers in Redis, ${orders} orders in MySQL`);
      }
      const perOrder = (seconds: number) => Number(((seconds * 1e6) / orders).toFixed(1));
      const cpuUsPerOrder = Object.fromEntries(measured.map((name) => [name, perOrder(after.cpu[name] - before.cpu[name])])) as Record<PipelineProcess, number>;
      cpuUsPerOrder.wrk = perOrder(wrk.cpuSeconds);
      const pipeline = Number(measured.reduce((sum, name) => sum + cpuUsPerOrder[name], 0).toFixed(1));
      const total = Number((pipeline + cpuUsPerOrder.wrk).toFixed(1));
      await redis.del(...Object.values(saleKeys(prefix, saleId)));
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
        cpuUsPerOrder: { ...cpuUsPerOrder, pipeline, total },
        redoBytesPerOrder: Math.round((after.redo - before.redo) / orders),
        binlogBytesPerOrder: Math.round((after.binlog - before.binlog) / orders),
        redis: redisCommandCosts(before.redis, after.redis, orders),
      };
    };

    const aloneRun = async (): Promise<GatewayAloneRun> => {
      const saleId = await newSale(`${prefix}-alone`);
      const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
      const pids = processTree(alone.child.pid!);
      const before = readProcesses(pids)!.cpuSeconds;
      const wrk = await runWrk(alone.url, WRK_SCRIPTS.closed, [buyersFile(enough(fastest.alone)), String(saleId)], options.connections, options.seconds);
      fastest.alone = Math.max(fastest.alone, wrk.requests / (wrk.durationUs / 1e6));
      const cpu = readProcesses(pids)!.cpuSeconds - before;
      await redis.del(...Object.values(saleKeys(`${prefix}-alone`, saleId)));
      if (wrk.errors.status > 0) throw new Error(`gateway alone: ${wrk.errors.status} refused`);
      return { loadAverage, rps: Math.round(wrk.requests / (wrk.durationUs / 1e6)), p50: wrk.latencyUs.p50 / 1000, p99: wrk.latencyUs.p99 / 1000, cpuUsPerRequest: Number(((cpu * 1e6) / wrk.requests).toFixed(1)) };
    };

    log(`pipeline: warm-up (2 workers, reconciler, gateway; redis-server ${redisPid}, mariadbd ${mariadbPid})`);
    await pipelineRun();
    await aloneRun();
    const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
    const runs = { closed: [] as PipelineRun[], open: [] as PipelineRun[], alone: [] as GatewayAloneRun[] };
    const describe = (r: PipelineRun) =>
      `${r.accepted} accepted at ${r.acceptRate}/s${r.targetRate ? ` (target ${r.targetRate}/s)` : ''}, backlog ${r.backlogAtEnd} at the end, drained in ${r.drainSeconds} s, sustained ${r.sustainedRate} orders/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.cpuUsPerOrder.pipeline} us CPU/order in the pipeline, ${r.cpuUsPerOrder.total} with wrk (${PIPELINE_PROCESSES.map((p) => `${p} ${r.cpuUsPerOrder[p]}`).join(', ')}), redo ${r.redoBytesPerOrder} B/order, load average ${r.loadAverage}`;
    for (let round = 0; round < options.rounds; round += 1) {
      const closed = await pipelineRun();
      runs.closed.push(closed);
      log(`closed: ${describe(closed)}`);
      const open = await pipelineRun(options.openRate ?? Math.round(closed.sustainedRate / 2));
      runs.open.push(open);
      log(`open: ${describe(open)}`);
      const gatewayAlone = await aloneRun();
      runs.alone.push(gatewayAlone);
      log(`gateway alone: ${gatewayAlone.rps} req/s, p50 ${gatewayAlone.p50} ms, p99 ${gatewayAlone.p99} ms, ${gatewayAlone.cpuUsPerRequest} us CPU/request, load average ${gatewayAlone.loadAverage}`);
    }
    if (options.profileDir) {
      // The statements MySQL spent its time on, by digest, beside the Node processes' profiles.
      const digests = await db.query('SELECT DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT / 1e6 AS total_us, SUM_ROWS_AFFECTED, SUM_ROWS_EXAMINED FROM performance_schema.events_statements_summary_by_digest ORDER BY SUM_TIMER_WAIT DESC LIMIT 25');
      writeFileSync(join(options.profileDir, 'mariadb-digests.json'), JSON.stringify(digests, (_, v: unknown) => (typeof v === 'bigint' ? Number(v) : v), 2));
      log(`profiles and MariaDB's statement digests in ${options.profileDir}`);
    }
    const med = (values: number[], digits = 1) => Number(median(values).toFixed(digits));
    return {
      loadAverage,
      seconds: options.seconds,
      rounds: options.rounds,
      connections: options.connections,
      innodb,
      closed: summarise(runs.closed),
      open: summarise(runs.open),
      gatewayAlone: {
        rps: Math.round(median(runs.alone.map((r) => r.rps))),
        p50: med(runs.alone.map((r) => r.p50), 2),
        p99: med(runs.alone.map((r) => r.p99), 2),
        cpuUsPerRequest: med(runs.alone.map((r) => r.cpuUsPerRequest)),
        runs: runs.alone,
      },
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

/** Medians of the runs, field by field; the Redis commands of the median run by total CPU. */
function summarise(runs: PipelineRun[]): PipelineSummary {
  const med = (pick: (r: PipelineRun) => number, digits = 1) => Number(median(runs.map(pick)).toFixed(digits));
  const cpuUsPerOrder = Object.fromEntries([...PIPELINE_PROCESSES, 'pipeline' as const, 'total' as const].map((name) => [name, med((r) => r.cpuUsPerOrder[name])])) as PipelineRun['cpuUsPerOrder'];
  const byTotal = [...runs].sort((a, b) => a.cpuUsPerOrder.total - b.cpuUsPerOrder.total);
  return {
    ...(runs[0]?.targetRate === undefined ? {} : { targetRate: med((r) => r.targetRate ?? 0, 0) }),
    accepted: med((r) => r.accepted, 0),
    acceptRate: med((r) => r.acceptRate, 0),
    p50: med((r) => r.p50, 2),
    p99: med((r) => r.p99, 2),
    backlogAtEnd: med((r) => r.backlogAtEnd, 0),
    drainSeconds: med((r) => r.drainSeconds, 3),
    sustainedRate: med((r) => r.sustainedRate, 0),
    cpuUsPerOrder,
    redoBytesPerOrder: med((r) => r.redoBytesPerOrder, 0),
    binlogBytesPerOrder: med((r) => r.binlogBytesPerOrder, 0),
    redis: byTotal[Math.floor(byTotal.length / 2)]?.redis ?? [],
    runs: runs.map((r) => ({ ...r, redis: [] })),
  };
}
