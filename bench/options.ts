import { readCommandLine, UsageError } from '@flashsale/config';

/** Every part of `npm run bench`, in the order it runs them. */
export const BENCH_PARTS = [
  'purchase',
  'scaling',
  'fsync',
  'drain',
  'expiry',
  'script',
  'cluster',
  'workers',
  'reconciler',
  'pipeline',
  'replica-wait',
  'door',
  'door-bots',
  'neighbours',
  'galera',
  'ready',
] as const;
export type BenchPart = (typeof BENCH_PARTS)[number];

/** What one `npm run bench` runs: the command line and the BENCH_* variables, defaults filled in. */
export interface BenchSettings {
  /** Seconds per HTTP load run. */
  seconds: number;
  /** Alternations of the contenders (A B C A B C). */
  rounds: number;
  connections: number;
  parts: Set<BenchPart>;
  drainRows: number;
  drainRounds: number;
  scriptSeconds: number;
  /** The script part's count of instructions (bench/script-instructions.ts): calls per path and round. */
  scriptCalls: number;
  clusterSales: number;
  drainSales: number;
  reconcilerRate: number;
  reconcilerSeconds: number;
  /** The pipeline part (bench/pipeline.ts): seconds per run, and its open loop's rate (default half the closed run's). */
  pipelineSeconds: number;
  pipelineRate?: number;
  quick: boolean;
  /** Append the run to bench/results.json and rewrite docs/BENCHMARKS.md's figures; else print only. */
  record: boolean;
}

const FULL = {
  seconds: 5,
  rounds: 3,
  drainRows: 20_000,
  drainRounds: 5,
  scriptSeconds: 2,
  scriptCalls: 2_000,
  reconcilerSeconds: 40,
  pipelineSeconds: 10,
};
/**
 * `--quick`: every part, shorter and once: about 75 s of load and some 15 process starts, so a minute or
 * two on an idle 2-core box (an estimate: see docs/BENCHMARKS.md for what was measured). A check that it
 * all runs, not figures to quote.
 */
const QUICK = {
  seconds: 2,
  rounds: 1,
  drainRows: 5_000,
  drainRounds: 1,
  scriptSeconds: 1,
  scriptCalls: 500,
  reconcilerSeconds: 10,
  pipelineSeconds: 3,
};

export const BENCH_COMMAND = {
  usage: `usage: npm run bench -- [--quick] [--record]

The gateway's purchase endpoint against node:http baselines, the workers' drain against raw INSERTs,
Redis fsync policies, GATEWAY_WORKERS scaling, the order expiry, the reserve script alone, a Redis
Cluster against one node, the drain by 1, 2 and 4 workers, the reconciler's CPU, the whole pipeline's
CPU per order by process (pipeline), the accept path with REDIS_WAIT_REPLICAS (replica-wait), the
door's paths (door), honest buyers against a farm of accounts at the door (door-bots, its figures
logged, not recorded), and the buyer path beside a flooded metrics port and the dashboard's live streams
at their caps (neighbours), and the order writes on one mariadbd against a 3-node Galera cluster behind
HAProxy (galera), and each role's time from spawn to /readyz 200,
built and from source (ready, logged, not recorded): all on this machine, contenders alternated, medians printed as the tables
of docs/BENCHMARKS.md. About thirty minutes (an estimate from the parts' own runs on this box).

  --quick    every part shorter and once (2 s runs, 1 round, 5,000 rows, 10 s of reconciler): a minute
             or two, to see that it all runs and roughly where it stands
  --record   append the run to bench/results.json and rewrite the figures in docs/BENCHMARKS.md (a run
             of every part of a section; replica-wait, door, neighbours and galera each their own); without it
             nothing in the repository changes

Variables (each overrides its default, --quick's too): BENCH_SECONDS (5) per load run, BENCH_ROUNDS (3),
BENCH_CONNECTIONS (64), BENCH_LOADGEN (wrk if on PATH, else autocannon), BENCH_PARTS (all:
${BENCH_PARTS.join(',')}), BENCH_DRAIN_ROWS (20000), BENCH_DRAIN_ROUNDS (5),
BENCH_SCRIPT_SECONDS (2), BENCH_SCRIPT_CALLS (2000: the reserve calls per path and round whose
instructions callgrind counts in redis-server, when valgrind is installed), BENCH_CLUSTER_SALES (30), BENCH_DRAIN_SALES (1), BENCH_RECONCILER_RATE (2000),
BENCH_RECONCILER_SECONDS (40), BENCH_PIPELINE_SECONDS (10), BENCH_PIPELINE_RATE (half the closed
run's sustained rate), BENCH_PIPELINE_AGAINST (a git revision run beside this checkout,
round by round, with the ratios), BENCH_PIPELINE_PROFILE (a directory: --cpu-prof for the gateway and workers,
performance_schema on; a profiling run, not figures to quote).`,
  options: { quick: { type: 'boolean', default: false }, record: { type: 'boolean', default: false } },
} as const;

/**
 * The bench's settings from its command line and environment (pure): 'help' for --help; throws
 * UsageError for an unknown option, a part that does not exist or a variable that is not a number.
 */
export function benchSettingsOf(args: readonly string[], env: NodeJS.ProcessEnv): BenchSettings | 'help' {
  const parsed = readCommandLine(BENCH_COMMAND, args);
  if (parsed === 'help') return 'help';
  const { quick, record } = parsed.values;
  const base = quick ? QUICK : FULL;
  const number = (name: string, fallback: number): number => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!(Number.isFinite(value) && value > 0)) throw new UsageError(`${name} must be a number above 0, not ${JSON.stringify(text)}`);
    return value;
  };
  const parts = (env.BENCH_PARTS ?? BENCH_PARTS.join(',')).split(',').map((part) => part.trim());
  const unknown = parts.filter((part) => !(BENCH_PARTS as readonly string[]).includes(part));
  if (unknown.length > 0) throw new UsageError(`BENCH_PARTS: no part ${unknown.join(', ')} (the parts: ${BENCH_PARTS.join(', ')})`);
  return {
    seconds: number('BENCH_SECONDS', base.seconds),
    rounds: number('BENCH_ROUNDS', base.rounds),
    connections: number('BENCH_CONNECTIONS', 64),
    parts: new Set(parts as BenchPart[]),
    drainRows: number('BENCH_DRAIN_ROWS', base.drainRows),
    // A drain run takes about a second: more of them steady its median at little cost.
    drainRounds: number('BENCH_DRAIN_ROUNDS', base.drainRounds),
    scriptSeconds: number('BENCH_SCRIPT_SECONDS', base.scriptSeconds),
    scriptCalls: number('BENCH_SCRIPT_CALLS', base.scriptCalls),
    clusterSales: number('BENCH_CLUSTER_SALES', 30),
    drainSales: number('BENCH_DRAIN_SALES', 1),
    reconcilerRate: number('BENCH_RECONCILER_RATE', 2000),
    reconcilerSeconds: number('BENCH_RECONCILER_SECONDS', base.reconcilerSeconds),
    pipelineSeconds: number('BENCH_PIPELINE_SECONDS', base.pipelineSeconds),
    ...(env.BENCH_PIPELINE_RATE ? { pipelineRate: number('BENCH_PIPELINE_RATE', 0) } : {}),
    quick,
    record,
  };
}
