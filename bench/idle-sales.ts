/**
 * `npm run bench:idle -- --sales 1,100,1000,10000 [--seconds 30]`: what the system costs with N live
 * sales and no purchases, for each N. For each: a fresh system (its own redis-server, database and
 * prefix; one gateway, one worker, one reconciler, default configuration), N sales created through the
 * admin API, a settle (past the reconciler's publish grace), then over `--seconds`: the CPU of each
 * process and of Redis and Redis's commands per second; then `--purchases` purchases one at a time, each
 * timed from its 202 to its order in MySQL. Prints a markdown table and appends the run to
 * bench/results-idle.json (`--out` elsewhere). An N that fails is reported and the next one runs; the
 * exit code is then 1.
 *
 * Options: --sales (1,100,1000,10000), --seconds (30), --settle (seconds; the reconciler's publish grace
 * + 2), --concurrency (32 creates in flight), --purchases (20), --pause-ms (300), --out.
 */
import { gitRevision } from '@flashsale/harness';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { ensureServices } from '../infra/ensure-services.ts';
import { measureIdle, type Teardown } from './idle-measure.ts';
import { appendIdleRun, idleMarkdown, isFailure, type IdleRun } from './idle-report.ts';

const log = (text: string) => console.log(`[bench:idle] ${text}`);

const COMMAND = {
  usage: `usage: npm run bench:idle -- [--sales 1,100,1000,10000] [--seconds 30] [--settle S] [--concurrency 32] [--purchases 20] [--pause-ms 300] [--out FILE]

What the system costs with N live sales and no purchases, for each N: a fresh system of its own
(redis-server, database, prefix), N sales, a settle, then the CPU of each process and Redis's commands
per second over --seconds; then --purchases purchases timed from 202 to order. Prints a table and
appends the run to bench/results-idle.json (--out elsewhere). Exit 1 when an N fails.

  --sales LIST       the numbers of live sales to measure, comma-separated (default 1,100,1000,10000)
  --seconds S        seconds of the measuring window (default 30)
  --settle S         seconds to wait before it (default the reconciler's publish grace + 2)
  --concurrency C    sale creations in flight (default 32)
  --purchases P      purchases timed to their order (default 20)
  --pause-ms M       milliseconds between those purchases (default 300)
  --out FILE         where the run is appended (default bench/results-idle.json)`,
  options: {
    sales: { type: 'string', default: '1,100,1000,10000' },
    seconds: { type: 'string', default: '30' },
    settle: { type: 'string' },
    concurrency: { type: 'string', default: '32' },
    purchases: { type: 'string', default: '20' },
    'pause-ms': { type: 'string', default: '300' },
    out: { type: 'string', default: fileURLToPath(new URL('./results-idle.json', import.meta.url)) },
  },
} as const;
const { values } = parseCommandLine(COMMAND);

function positive(name: string, text: string, min = 1): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min)
    exitWithUsage(COMMAND, `--${name} must be a whole number of at least ${min}, not ${JSON.stringify(text)}`);
  return value;
}

const config = loadConfig();
const counts = values.sales.split(',').map((n) => positive('sales', n.trim()));
const seconds = positive('seconds', values.seconds);
// The reconciler watches a sale only once RECONCILER_PUBLISH_GRACE_MS has passed since it was created.
const settleSeconds =
  values.settle === undefined ? Math.ceil(config.RECONCILER_PUBLISH_GRACE_MS / 1000) + 2 : positive('settle', values.settle, 0);
const concurrency = positive('concurrency', values.concurrency);
const purchases = positive('purchases', values.purchases);
const pauseMs = positive('pause-ms', values['pause-ms'], 0);

const { commit, changes } = gitRevision();

const run: IdleRun = {
  date: new Date().toISOString(),
  machine: `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
  node: process.version,
  command: `npm run bench:idle -- ${process.argv.slice(2).join(' ')}`.trim(),
  commit,
  changes,
  loadAverage: Number(os.loadavg()[0]!.toFixed(2)),
  settings: { seconds, settleSeconds, concurrency, purchases, pauseMs },
  results: [],
};

// A signal stops the N in hand (its processes, redis-server and database), which is reported as
// interrupted; what was measured before it is printed and kept.
let current: { sales: number; teardown: Teardown | undefined } | undefined;
let interrupted: NodeJS.Signals | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = signal;
    log(`${signal}: stopping the processes and removing the database`);
    const deadline = setTimeout(() => process.exit(1), 20_000);
    void (current?.teardown?.() ?? Promise.resolve())
      .catch((err: unknown) => log(`teardown failed: ${String(err)}`))
      .finally(() => {
        clearTimeout(deadline);
        if (current) run.results.push({ sales: current.sales, error: `interrupted (${signal})` });
        finish();
        process.exit(signal === 'SIGINT' ? 130 : 143);
      });
  });
}

function finish(): void {
  appendIdleRun(values.out, run);
  console.log(`\n${idleMarkdown(run)}\n`);
  log(`appended to ${values.out}`);
  const failed = run.results.filter(isFailure);
  const missing = run.results.filter((r) => !isFailure(r) && r.toOrder.orders < r.toOrder.purchases);
  if (failed.length > 0 || missing.length > 0) {
    log(
      `not measured: ${failed.map((r) => r.sales).join(', ') || 'none'}; purchases without an order: ${missing.map((r) => r.sales).join(', ') || 'none'}`,
    );
    process.exitCode = 1;
  }
}

log(
  `sales ${counts.join(', ')}; ${seconds} s window after ${settleSeconds} s; ${purchases} purchases; commit ${run.commit}; load average ${run.loadAverage}`,
);
if (changes.length > 0) log(`tracked files differ from HEAD: ${changes.join(', ')}`);
await ensureServices();
for (const sales of counts) {
  current = { sales, teardown: undefined };
  try {
    const result = await measureIdle({ sales, seconds, settleSeconds, concurrency, purchases, pauseMs, log }, (teardown) => {
      if (current) current.teardown = teardown;
    });
    if (interrupted) break;
    run.results.push(result);
  } catch (error) {
    // Interrupted: the signal handler reports this N and exits.
    if (interrupted) await new Promise(() => undefined);
    const message = error instanceof Error ? error.message : String(error);
    log(`${sales} sales: FAILED: ${message}`);
    run.results.push({ sales, error: message });
  }
  current = undefined;
}
if (!interrupted) finish();
