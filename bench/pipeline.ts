/**
 * BENCH_PARTS=pipeline: the whole pipeline as deployed on one box, its cost per order by process.
 *
 * A redis-server and a mariadbd of the part's own (the box's shared ones serve other work, which their
 * /proc figures would count), a gateway, two workers and a reconciler on them, and wrk -t1 on the accept
 * path, every request a new buyer of a sale with ample stock. Each round runs, back to back:
 * - closed: wrk at full speed (each connection sends its next purchase when the last is answered);
 * - open: arrivals at half the closed run's sustained rate, paced by bench/wrk/paced-purchase.lua;
 * - gateway alone: a second gateway on another Redis prefix, which no worker reads, under the closed load.
 * With `against` (BENCH_PIPELINE_AGAINST), a second stack from that revision's checkout runs on the same
 * servers, on a prefix and a database of its own, each round's runs of the two back to back (which goes
 * first alternating by round), the one not under load stopped (bench/pipeline-stack.ts); the open rate is
 * the same for both.
 * For the two pipeline runs the clock runs from wrk's first request to the last order committed (the
 * stream's group with neither lag nor pending entries); the sustained rate is the orders over that time,
 * so a run whose workers fall behind pays for its backlog in the drain. CPU per order is each process's
 * /proc utime + stime over the same window divided by the orders; MariaDB's bytes per order are the
 * deltas of Innodb_os_log_written (redo) and Binlog_bytes_written.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mariadb';
import { createRedis, type ScriptedRedis } from '@flashsale/redis-store';
import { migrate } from '@flashsale/order-store';
import { gitRevision, startMariaDbServer, startRedisServer } from '@flashsale/harness';
import { median } from './load.ts';
import { checkoutOf } from './pipeline-checkout.ts';
import { innodbSettingsOf, mariadbPidOf, type CommandCost } from './pipeline-servers.ts';
import { PIPELINE_PROCESSES, type GatewayAloneRun, type PipelineRun } from './pipeline-run.ts';
import { startStack, type Stack } from './pipeline-stack.ts';

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
  /** Another revision (BENCH_PIPELINE_AGAINST) run beside this checkout, round by round (A B A B), on the same servers. */
  against?: string;
  /** A directory for --cpu-prof profiles of the gateway and workers, and performance_schema on: a profiling run, not figures to quote. */
  profileDir?: string;
  log(text: string): void;
}

/** One contender's medians: this checkout's, or the revision it ran against. */
export interface ContenderResults {
  commit: string;
  closed: PipelineSummary;
  open: PipelineSummary;
  gatewayAlone: { rps: number; p50: number; p99: number; cpuUsPerRequest: number; runs: GatewayAloneRun[] };
}

export interface PipelineResults extends ContenderResults {
  loadAverage: number;
  seconds: number;
  rounds: number;
  connections: number;
  innodb: Record<string, string>;
  /**
   * The revision run beside this checkout, and the medians of each round's ratios (its runs and this
   * checkout's ran back to back): its CPU per order over this one's (above 1: this one is cheaper), this
   * one's sustained rate over its.
   */
  against?: ContenderResults & { ratios: { closedCpu: number; openCpu: number; closedRate: number; openRate: number; aloneRps: number } };
}

export type PipelineSummary = Omit<PipelineRun, 'loadAverage' | 'redis' | 'targetRate' | 'requests' | 'errors' | 'loadSeconds'> & {
  targetRate?: number;
  redis: CommandCost[];
  runs: PipelineRun[];
};

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
    const redis: ScriptedRedis = createRedis(redisServer.url);
    stops.push(() => redis.quit());
    const db = await createConnection({ host: '127.0.0.1', port: mariadb.port, user: 'root', password: '' });
    stops.push(() => db.end());
    const innodb = await innodbSettingsOf(db);
    const servers = {
      redisPid: Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]),
      mariadbPid: await mariadbPidOf(db),
      redis,
      redisUrl: redisServer.url,
      db,
      mariadbUrl: (database: string) => mariadb.url(database),
    };
    const buyersFiles = new Map<number, string>();
    // wrk builds every request of its buyers file before the first is sent (bench/wrk/purchase.lua), some
    // microseconds of its CPU each: each run gets a file of the first buyers it may need, not all of them.
    const buyersFile = (needed: number): string => {
      const lines = Math.min(options.buyers.length, Math.ceil(needed / 10_000) * 10_000);
      let file = buyersFiles.get(lines);
      if (!file) {
        file = join(dir, `buyers-${lines}.txt`);
        writeFileSync(
          file,
          options.buyers
            .slice(0, lines)
            .map((buyer) => `${buyer.id} ${buyer.token}\n`)
            .join(''),
        );
        buyersFiles.set(lines, file);
      }
      return file;
    };
    const nodeOptions = profiling ? `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${options.profileDir}`.trim() : undefined;
    const common = {
      servers,
      buyersFile,
      authSecret: options.authSecret,
      connections: options.connections,
      seconds: options.seconds,
      nodeOptions,
    };

    const stacks: Stack[] = [];
    if (options.against) {
      const checkout = checkoutOf(options.against);
      stops.push(async () => checkout.remove());
      const database = 'flashsale_against';
      checkout.migrate(mariadb.url(database));
      stacks.push(
        await startStack({
          ...common,
          name: `against ${checkout.commit}`,
          commit: checkout.commit,
          root: checkout.root,
          prefix: 'against',
          database,
        }),
      );
      stops.push(() => stacks[0]!.stop());
    }
    await migrate(mariadb.url('flashsale_bench'));
    const current = await startStack({
      ...common,
      name: 'this checkout',
      commit: gitRevision().commit,
      prefix: 'current',
      database: 'flashsale_bench',
    });
    stacks.push(current);
    stops.push(() => current.stop());

    log(
      `pipeline: warm-up of ${stacks.map((s) => `${s.name} (${s.commit})`).join(' and ')}; redis-server ${servers.redisPid}, mariadbd ${servers.mariadbPid}`,
    );
    for (const stack of stacks) {
      for (const other of stacks) await other.pause(other !== stack);
      await stack.closed();
      await stack.alone();
    }
    const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
    const runs = new Map(
      stacks.map((stack) => [stack, { closed: [] as PipelineRun[], open: [] as PipelineRun[], alone: [] as GatewayAloneRun[] }]),
    );
    const describe = (r: PipelineRun) =>
      `${r.accepted} accepted at ${r.acceptRate}/s${r.targetRate ? ` (target ${r.targetRate}/s)` : ''}, backlog ${r.backlogAtEnd} at the end, drained in ${r.drainSeconds} s, sustained ${r.sustainedRate} orders/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.cpuUsPerOrder.pipeline} us CPU/order in the pipeline, ${r.cpuUsPerOrder.total} with wrk (${PIPELINE_PROCESSES.map((p) => `${p} ${r.cpuUsPerOrder[p]}`).join(', ')}), redo ${r.redoBytesPerOrder} B/order, load average ${r.loadAverage}`;
    for (let round = 0; round < options.rounds; round += 1) {
      let openRate = options.openRate;
      // Which contender goes first alternates by round: the second pays what the first leaves running on
      // the shared servers (InnoDB's purge and page flushing, Redis freeing), and that must not always be
      // the same one.
      for (const stack of round % 2 === 0 ? stacks : [...stacks].reverse()) {
        for (const other of stacks) await other.pause(other !== stack);
        const mine = runs.get(stack)!;
        const closed = await stack.closed();
        mine.closed.push(closed);
        log(`${stack.name}, closed: ${describe(closed)}`);
        // The same arrival rate for every contender of the round: half the first one's closed rate.
        openRate ??= Math.round(closed.sustainedRate / 2);
        const open = await stack.open(openRate);
        mine.open.push(open);
        log(`${stack.name}, open: ${describe(open)}`);
        const alone = await stack.alone();
        mine.alone.push(alone);
        log(
          `${stack.name}, gateway alone: ${alone.rps} req/s, p50 ${alone.p50} ms, p99 ${alone.p99} ms, ${alone.cpuUsPerRequest} us CPU/request, load average ${alone.loadAverage}`,
        );
      }
    }
    for (const stack of stacks) await stack.pause(false);
    if (options.profileDir) {
      // The statements MySQL spent its time on, by digest, beside the Node processes' profiles.
      const digests = await db.query<Record<string, unknown>[]>(
        'SELECT DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT / 1e6 AS total_us, SUM_ROWS_AFFECTED, SUM_ROWS_EXAMINED FROM performance_schema.events_statements_summary_by_digest ORDER BY SUM_TIMER_WAIT DESC LIMIT 25',
      );
      writeFileSync(
        join(options.profileDir, 'mariadb-digests.json'),
        JSON.stringify(digests, (_, v: unknown) => (typeof v === 'bigint' ? Number(v) : v), 2),
      );
      log(`profiles and MariaDB's statement digests in ${options.profileDir}`);
    }
    const resultsOf = (stack: Stack): ContenderResults => {
      const r = runs.get(stack)!;
      return {
        commit: stack.commit,
        closed: summarise(r.closed),
        open: summarise(r.open),
        gatewayAlone: {
          rps: Math.round(median(r.alone.map((a) => a.rps))),
          p50: Number(median(r.alone.map((a) => a.p50)).toFixed(2)),
          p99: Number(median(r.alone.map((a) => a.p99)).toFixed(2)),
          cpuUsPerRequest: Number(median(r.alone.map((a) => a.cpuUsPerRequest)).toFixed(1)),
          runs: r.alone,
        },
      };
    };
    const results: PipelineResults = {
      loadAverage,
      seconds: options.seconds,
      rounds: options.rounds,
      connections: options.connections,
      innodb,
      ...resultsOf(current),
    };
    if (stacks.length > 1) {
      const base = runs.get(stacks[0]!)!;
      const mine = runs.get(current)!;
      const ratio = (of: number[], to: number[]) => Number(median(of.map((value, i) => value / to[i]!)).toFixed(3));
      const cpu = (list: PipelineRun[]) => list.map((r) => r.cpuUsPerOrder.pipeline);
      const rate = (list: PipelineRun[]) => list.map((r) => r.sustainedRate);
      results.against = {
        ...resultsOf(stacks[0]!),
        ratios: {
          closedCpu: ratio(cpu(base.closed), cpu(mine.closed)),
          openCpu: ratio(cpu(base.open), cpu(mine.open)),
          closedRate: ratio(rate(mine.closed), rate(base.closed)),
          openRate: ratio(rate(mine.open), rate(base.open)),
          aloneRps: ratio(
            mine.alone.map((a) => a.rps),
            base.alone.map((a) => a.rps),
          ),
        },
      };
    }
    return results;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

/** Medians of the runs, field by field; the Redis commands of the median run by total CPU. */
function summarise(runs: PipelineRun[]): PipelineSummary {
  const med = (pick: (r: PipelineRun) => number, digits = 1) => Number(median(runs.map(pick)).toFixed(digits));
  const cpuUsPerOrder = Object.fromEntries(
    [...PIPELINE_PROCESSES, 'pipeline' as const, 'total' as const].map((name) => [name, med((r) => r.cpuUsPerOrder[name])]),
  ) as PipelineRun['cpuUsPerOrder'];
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
