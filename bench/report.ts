import type { ReconcilerCost } from './reconciler-cost.ts';
import type { ScriptInstructions } from './script-instructions.ts';
import type { PipelineResults } from './pipeline.ts';
import { pipelineMarkdown } from './pipeline-report.ts';
import { goalsMarkdown } from './goals-report.ts';
import { replicaWaitMarkdown, type ReplicaWaitResults } from './replica-wait.ts';
import { doorMarkdown, type DoorResults } from './door.ts';
import { neighboursMarkdown, type NeighboursResults } from './neighbours.ts';
import { galeraMarkdown, type GaleraResults } from './galera.ts';
import type { ReadyResults } from './ready.ts';
import type { DoorBotsResults } from './door-bots.ts';
import type { PathName, ReserveSummary, RunInfo, Summary } from './summary.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** One `npm run bench`, as appended to bench/results.json; a part left out (BENCH_PARTS) is absent. */
export interface BenchResults extends RunInfo {
  paths?: Record<
    PathName,
    {
      bare: Summary;
      authenticated: Summary;
      gateway: Summary;
      /** Medians of each round's ratio (the contenders of a round run back to back). */
      ratios: { gatewayToAuthenticated: number; gatewayToBare: number; authenticatedToBare: number };
      /** Gateway / authenticated baseline in each round, in order (absent from runs recorded before it was kept). */
      roundRatios?: number[];
      /** A second authenticated baseline / the first, in each round (accept only; absent before it was run). */
      controlRoundRatios?: number[];
    }
  >;
  scaling?: Record<string, Summary>;
  fsync?: { always: Summary; everysec: Summary };
  drain?: { workerSeconds: number; rawSeconds: number; workerRuns: number[]; rawRuns: number[] };
  /** Unpaid orders expired and returned to Redis per second against the same worker's drain (BENCH_PARTS expiry). */
  expiry?: {
    rows: number;
    drainOrdersPerSecond: number;
    expiryOrdersPerSecond: number;
    runs: { drainSeconds: number; expirySeconds: number }[];
  };
  peakRssMiB?: { gateway: number; bare: number; authenticated: number };
  /** The reconciler's CPU while one sale takes a fixed rate (BENCH_PARTS reconciler; bench/reconciler-cost.ts). */
  reconciler?: { loadAverage: number } & ReconcilerCost;
  /** The reserve script alone on one Redis node (BENCH_PARTS script). */
  script?: { loadAverage: number; instructions?: ScriptInstructions } & Record<'accept' | 'duplicate' | 'sold_out', ReserveSummary>;
  /** The same pipelined load over many sales, on a 3-master cluster and on one node (BENCH_PARTS cluster). */
  cluster?: {
    loadAverage: number;
    sales: number;
    single: ReserveSummary;
    cluster: ReserveSummary & { salesPerMaster: number[] };
    /** Median of the rounds' cluster / single calls per second. */
    ratio: number;
  };
  /** The drain with 1, 2 and 4 worker processes (BENCH_PARTS workers). */
  drainWorkers?: {
    loadAverage: number;
    rows: number;
    sales: number;
    byWorkers: Record<
      string,
      { ordersPerSecond: number; seconds: number; runs: { seconds: number; ordersPerSecond: number; loadAverage: number }[] }
    >;
    /** Medians of the rounds' ratios of orders per second. */
    ratios: { twoToOne: number; fourToTwo: number };
  };
  /** The whole pipeline on one box, CPU per order by process (BENCH_PARTS pipeline; bench/pipeline.ts). */
  pipeline?: PipelineResults;
  /** The accept path with REDIS_WAIT_REPLICAS off, 1 and every replica (BENCH_PARTS replica-wait). */
  replicaWait?: ReplicaWaitResults;
  /** The door's paths against an open sale's (BENCH_PARTS door). */
  door?: DoorResults;
  /** Honest buyers against a farm of accounts at the door (BENCH_PARTS door-bots; bench/door-bots.ts logs its figures). */
  doorBots?: DoorBotsResults;
  /** The buyer path quiet, beside a flooded metrics port, beside live streams at their caps (BENCH_PARTS neighbours). */
  neighbours?: NeighboursResults;
  /** The order writes on one mariadbd against a 3-node Galera cluster (BENCH_PARTS galera). */
  galera?: GaleraResults;
  /** Spawn to /readyz 200 of each role, built and from source (bench/ready.ts). */
  ready?: ReadyResults;
}

const RESULTS = fileURLToPath(new URL('./results.json', import.meta.url));
const DOC = fileURLToPath(new URL('../docs/BENCHMARKS.md', import.meta.url));
const START = '<!-- bench-results:start -->';
const END = '<!-- bench-results:end -->';
const SCALE_START = '<!-- bench-scale:start -->';
const SCALE_END = '<!-- bench-scale:end -->';

/** The goals the table is read against: against the authenticated baseline. */
const GOALS: Record<PathName, { goal: number; floor: number }> = {
  accept: { goal: 0.9, floor: 0.8 },
  duplicate: { goal: 0.9, floor: 0.8 },
  sold_out: { goal: 1, floor: 1 },
};

const ratio = (value: number) => value.toFixed(2);
const latency = (s: Summary) => `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}`;
const verdict = (value: number, { goal, floor }: { goal: number; floor: number }) =>
  value >= goal
    ? `met (goal ${goal})`
    : value >= floor
      ? `above the floor ${floor}, below the goal ${goal}`
      : `**not met** (floor ${floor})`;

/** The results section, as it goes between the markers of docs/BENCHMARKS.md. */
export function resultsMarkdown(r: BenchResults): string {
  const lines = [
    `${r.date.slice(0, 10)}, \`${r.command}\` on ${r.commit}, load by ${r.loadGenerator}, ${r.settings.connections} connections, ${r.settings.seconds} s per run,`,
    `${r.settings.rounds} rounds alternating the contenders; medians. Machine: ${r.machine}; Node ${r.node}.`,
  ];
  if (r.paths) {
    const paths = r.paths;
    lines.push(
      '',
      '| path | bare baseline req/s | p50 / p99 ms | authenticated baseline req/s | p50 / p99 ms | gateway req/s | p50 / p99 ms | gateway / authenticated | gateway / bare |',
      '|---|---|---|---|---|---|---|---|---|',
      ...(['accept', 'duplicate', 'sold_out'] as const).map((path) => {
        const { bare, authenticated, gateway, ratios } = paths[path];
        return `| ${path.replace('_', ' ')} | ${bare.rps} | ${latency(bare)} | ${authenticated.rps} | ${latency(authenticated)} | ${gateway.rps} | ${latency(gateway)} | **${ratio(ratios.gatewayToAuthenticated)}** | ${ratio(ratios.gatewayToBare)} |`;
      }),
      '',
      '| CPU per request answered, µs (server process, user + system) | bare baseline | authenticated baseline | gateway | gateway − authenticated |',
      '|---|---|---|---|---|',
      ...(['accept', 'duplicate', 'sold_out'] as const).map((path) => {
        const cpu = (s: Summary) => s.cpuUsPerRequest ?? NaN;
        const { bare, authenticated, gateway } = paths[path];
        return `| ${path.replace('_', ' ')} | ${cpu(bare).toFixed(0)} | ${cpu(authenticated).toFixed(0)} | ${cpu(gateway).toFixed(0)} | ${(cpu(gateway) - cpu(authenticated)).toFixed(0)} |`;
      }),
      '',
      `Authentication alone (authenticated / bare): accept ${ratio(paths.accept.ratios.authenticatedToBare)}, duplicate ${ratio(paths.duplicate.ratios.authenticatedToBare)}, sold out ${ratio(paths.sold_out.ratios.authenticatedToBare)}.`,
      `Against the authenticated baseline: ${(['accept', 'duplicate', 'sold_out'] as const).map((path) => `${path.replace('_', ' ')} ${verdict(paths[path].ratios.gatewayToAuthenticated, GOALS[path])}`).join('; ')}.`,
    );
    if (paths.accept.roundRatios)
      lines.push(
        `Gateway / authenticated baseline, round by round: ${(['accept', 'duplicate', 'sold_out'] as const).map((path) => `${path.replace('_', ' ')} ${(paths[path].roundRatios ?? []).map(ratio).join(', ')}`).join('; ')}.`,
      );
    if (paths.accept.controlRoundRatios)
      lines.push(
        `The control, a second authenticated baseline / the first, round by round (accept): ${paths.accept.controlRoundRatios.map(ratio).join(', ')}: how far the box alone moves a ratio.`,
      );
  }
  if (r.peakRssMiB)
    lines.push(
      '',
      `Peak RSS under load: gateway ${r.peakRssMiB.gateway} MiB, bare baseline ${r.peakRssMiB.bare} MiB, authenticated baseline ${r.peakRssMiB.authenticated} MiB.`,
    );
  if (r.scaling) {
    lines.push(
      '',
      '| GATEWAY_WORKERS, accept path | req/s | p50 / p99 ms |',
      '|---|---|---|',
      ...Object.entries(r.scaling).map(([workers, s]) => `| ${workers} | ${s.rps} | ${latency(s)} |`),
    );
  }
  if (r.fsync) {
    lines.push(
      '',
      '| Redis AOF, gateway accept path | req/s | p50 / p99 ms |',
      '|---|---|---|',
      `| appendfsync always | ${r.fsync.always.rps} | ${latency(r.fsync.always)} |`,
      `| appendfsync everysec | ${r.fsync.everysec.rps} | ${latency(r.fsync.everysec)} |`,
      `| always / everysec | ${ratio(r.fsync.always.rps / r.fsync.everysec.rps)} | |`,
    );
  }
  if (r.drain) {
    lines.push(
      '',
      `Drain of ${r.settings.drainRows} reservations (medians of ${r.settings.drainRounds} alternated runs): one worker ${r.drain.workerSeconds.toFixed(2)} s, raw multi-row INSERTs ${r.drain.rawSeconds.toFixed(2)} s, raw / worker **${ratio(r.drain.rawSeconds / r.drain.workerSeconds)}** (goal 0.7).`,
    );
  }
  if (r.expiry) {
    lines.push(
      '',
      `Expiry of ${r.expiry.rows} unpaid orders of one sale, made due at once, by one worker (medians of ${r.expiry.runs.length} runs): ${r.expiry.expiryOrdersPerSecond} orders expired and their units returned to Redis per second, against the same worker's drain of those orders at ${r.expiry.drainOrdersPerSecond} orders/s: expiry / drain **${ratio(r.expiry.expiryOrdersPerSecond / r.expiry.drainOrdersPerSecond)}**.`,
    );
  }
  return lines.join('\n');
}

/** The scale sections (the reserve script alone, one node against a cluster, the drain by 1, 2, 4 workers), as they go between the scale markers. */
export function scaleMarkdown(r: BenchResults): string {
  const lines = [
    `${r.date.slice(0, 10)}, \`${r.command}\` on ${r.commit}, ${r.settings.rounds} rounds alternating the contenders; medians. Machine: ${r.machine}; Node ${r.node}.`,
  ];
  const us = (value: number) => value.toFixed(1);
  const costs = (s: ReserveSummary) => `${us(s.clientCpuUs)} | ${us(s.redisScriptUs)} | ${us(s.redisCpuUs)}`;
  const pipelining = `\`reserve\` (EVALSHA of reserve.lua) from one ioredis client in pipelines of ${r.settings.scriptBatch} calls, ${r.settings.scriptInFlight} under way, ${r.settings.scriptSeconds} s per run`;
  if (r.script) {
    const { accept, duplicate, sold_out: soldOut } = r.script;
    lines.push(
      '',
      `**The reserve script's ceiling on one Redis node**, no HTTP: ${pipelining}, on a redis-server of the bench's own (no persistence); load average ${r.script.loadAverage} at the start.`,
      '',
      '| path | calls/s | client CPU µs/call | Redis time in the script µs/call | Redis CPU µs/call |',
      '|---|---|---|---|---|',
      `| accept | **${accept.callsPerSecond}** | ${costs(accept)} |`,
      `| refused: duplicate buyer | **${duplicate.callsPerSecond}** | ${costs(duplicate)} |`,
      `| refused: sold out | **${soldOut.callsPerSecond}** | ${costs(soldOut)} |`,
    );
    const counted = r.script.instructions;
    if (counted) {
      const each = (path: 'accept' | 'duplicate' | 'sold_out') =>
        `${counted.perCall[path].toLocaleString('en-US')} (${counted.runs[path].map((n) => n.toLocaleString('en-US')).join(', ')})`;
      lines.push(
        '',
        `Instructions per call in redis-server (valgrind's callgrind, ${counted.calls} calls per path and round, ${counted.rounds} rounds; the median, then every round): accept ${each('accept')}; duplicate ${each('duplicate')}; sold out ${each('sold_out')}.`,
      );
    }
  }
  if (r.cluster) {
    const { single, cluster } = r.cluster;
    lines.push(
      '',
      `**${r.cluster.sales} sales spread over 3 masters against 1 node**: accepted calls, call i to sale i mod ${r.cluster.sales}, ${pipelining}; a 3-master Redis Cluster (sales per master ${cluster.salesPerMaster.join(' / ')}) against one redis-server, both the bench's own, same client; load average ${r.cluster.loadAverage} at the start.`,
      '',
      '| Redis | calls/s | client CPU µs/call | Redis time in the script µs/call (all nodes) | Redis CPU µs/call (all nodes) |',
      '|---|---|---|---|---|',
      `| 1 node | ${single.callsPerSecond} | ${costs(single)} |`,
      `| 3-master cluster | ${cluster.callsPerSecond} | ${costs(cluster)} |`,
      `| cluster / 1 node | **${ratio(r.cluster.ratio)}** | | | |`,
      '',
      'The three masters, the client and everything else on the box share its cores: here a cluster adds no capacity, and the ratio shows what the cluster client (a pipeline per master, slot routing) and three servers cost on the same cores, not what spreading sales over machines of their own gains.',
    );
  }
  if (r.drainWorkers) {
    const d = r.drainWorkers;
    lines.push(
      '',
      `**The drain with more workers**: ${d.rows} reservations waiting in ${d.sales === 1 ? "one sale's stream" : `the streams of ${d.sales} sales`}, written to MySQL by 1, 2 and 4 worker processes (started once, warm; the ones not measured stopped), from the work signal to every group drained; load average ${d.loadAverage} at the start.`,
      '',
      '| worker processes | orders/s | seconds |',
      '|---|---|---|',
      ...Object.entries(d.byWorkers).map(([workers, w]) => `| ${workers} | ${w.ordersPerSecond} | ${w.seconds.toFixed(2)} |`),
      '',
      `2 workers / 1: **${ratio(d.ratios.twoToOne)}**; 4 workers / 2: **${ratio(d.ratios.fourToTwo)}** (medians of the rounds' ratios).`,
    );
  }
  return lines.join('\n');
}

function replaceBetween(doc: string, start: string, end: string, content: string): string {
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) throw new Error(`docs/BENCHMARKS.md lacks the ${start} ... ${end} markers`);
  return `${doc.slice(0, from + start.length)}\n${content}\n${doc.slice(to)}`;
}

/** The sections of the parts in files of their own, each between its markers, when the run ran the part. */
function partSections(r: BenchResults): { start: string; end: string; markdown: string }[] {
  const sections = [
    { name: 'goals', markdown: goalsMarkdown(r) },
    { name: 'pipeline', markdown: r.pipeline && pipelineMarkdown(r.pipeline) },
    { name: 'replica-wait', markdown: r.replicaWait && replicaWaitMarkdown(r, r.replicaWait) },
    { name: 'door', markdown: r.door && doorMarkdown(r, r.door) },
    { name: 'neighbours', markdown: r.neighbours && neighboursMarkdown(r, r.neighbours) },
    { name: 'galera', markdown: r.galera && galeraMarkdown(r, r.galera) },
  ];
  return sections.flatMap(({ name, markdown }) =>
    markdown ? [{ start: `<!-- bench-${name}:start -->`, end: `<!-- bench-${name}:end -->`, markdown }] : [],
  );
}

/** Prints the run's tables (the markdown of docs/BENCHMARKS.md's sections). */
export function printResults(results: BenchResults): void {
  const purchase = results.paths || results.scaling || results.fsync || results.drain || results.expiry || results.peakRssMiB;
  const scale = results.script || results.cluster || results.drainWorkers;
  const parts = partSections(results);
  if (purchase || (!scale && parts.length === 0)) console.log(`\n${resultsMarkdown(results)}`);
  if (scale) console.log(`\n${scaleMarkdown(results)}`);
  for (const { markdown } of parts) console.log(`\n${markdown}`);
}

/**
 * `--record`: appends the run to bench/results.json (every recorded run, oldest first) and prints its
 * tables; a run of every purchase part (purchase, scaling, fsync, drain) also replaces the results
 * section of docs/BENCHMARKS.md, a run of every scale part (script, cluster, workers) its scale section,
 * a run of replica-wait, door, neighbours or galera that part's section, a run of purchase, script, pipeline and
 * ready together the speed goals' section.
 */
export function writeResults(results: BenchResults): void {
  const history = JSON.parse(readFileSync(RESULTS, 'utf8')) as { runs: unknown[] };
  history.runs.push(results);
  writeFileSync(RESULTS, `${JSON.stringify(history, null, 2)}\n`);
  printResults(results);
  const before = readFileSync(DOC, 'utf8');
  let doc = before;
  if (results.paths && results.scaling && results.fsync && results.drain) doc = replaceBetween(doc, START, END, resultsMarkdown(results));
  if (results.script && results.cluster && results.drainWorkers) doc = replaceBetween(doc, SCALE_START, SCALE_END, scaleMarkdown(results));
  for (const { start, end, markdown } of partSections(results)) doc = replaceBetween(doc, start, end, markdown);
  if (doc !== before) writeFileSync(DOC, doc);
}
