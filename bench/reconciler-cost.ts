/**
 * The reconciler's CPU per second of sale at a fixed accept rate: what the background process protecting
 * a sale costs while it sells. Runs the soak (loadtest/soak) open loop at `rate` purchases a second for
 * `seconds`, one sale, the whole system with its defaults, and reads the CPU each process used over the
 * load window from the soak's samples (/proc of each process). A figure of cores: 0.05 means the
 * reconciler used 5% of one core while the sale took `rate` purchases a second.
 *
 *   npm run bench:reconciler -- [--rate 2000] [--seconds 60]
 *
 * Also a part of `npm run bench` (bench/run.ts), with BENCH_RECONCILER_RATE and BENCH_RECONCILER_SECONDS.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitWithUsage, parseCommandLine } from '@flashsale/config';
import type { RunTotals } from '../loadtest/soak/analysis.ts';

export interface ReconcilerCost {
  rate: number;
  seconds: number;
  /** Accepts a second the gateway counted over the load window. */
  acceptsPerSecond: number;
  /** CPU cores each process used on average over the load window. */
  cores: Record<string, number>;
  /** The reconciler's CPU over the gateway's. */
  reconcilerToGateway: number | null;
  ledgerPassed: boolean;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export function measureReconcilerCost(rate: number, seconds: number): ReconcilerCost {
  const out = mkdtempSync(join(tmpdir(), 'flashsale-reconciler-cost-'));
  try {
    const run = spawnSync(
      process.execPath,
      [
        '--conditions=@flashsale/source',
        '--import',
        'tsx',
        'loadtest/soak/run.ts',
        '--seconds',
        String(seconds),
        '--rate',
        String(rate),
        '--sample-seconds',
        '5',
        '--out',
        out,
      ],
      { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const report = readdirSync(out).find((file) => file.endsWith('.json'));
    if (!report) throw new Error(`the soak wrote no report (exit ${run.status}):\n${run.stdout}`);
    const { totals, ledger } = JSON.parse(readFileSync(join(out, report), 'utf8')) as { totals: RunTotals; ledger: { passed: boolean } };
    const cores = Object.fromEntries(totals.processes.filter((p) => p.cpuPercent !== null).map((p) => [p.name, p.cpuPercent! / 100]));
    return {
      rate,
      seconds,
      acceptsPerSecond: totals.acceptsPerSecond,
      cores,
      reconcilerToGateway: totals.reconcilerToGatewayCpu,
      ledgerPassed: ledger.passed,
    };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

export function describeReconcilerCost(cost: ReconcilerCost): string {
  const core = (name: string) => (cost.cores[name] ?? Number.NaN).toFixed(3);
  return [
    `reconciler CPU at ${cost.rate} purchases/s paced for ${cost.seconds} s (${Math.round(cost.acceptsPerSecond)} accepted/s):`,
    `  reconciler ${core('reconciler')} cores, gateway ${core('gateway')}, workers ${core('worker-1')} + ${core('worker-2')}`,
    `  reconciler / gateway CPU: ${cost.reconcilerToGateway?.toFixed(3) ?? 'n/a'}; ledger ${cost.ledgerPassed ? 'PASS' : 'FAIL'}`,
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const command = {
    usage: `usage: npm run bench:reconciler -- [--rate R] [--seconds S]

The reconciler's CPU while one sale takes a fixed rate: runs the soak open loop (npm run soak -- --rate R
--seconds S) and prints the CPU cores each process used over the load window, and the reconciler's
against the gateway's. Exit 1 when the soak's ledger check fails.

  --rate R      purchases a second (default 2000)
  --seconds S   seconds of load (default 60)`,
    options: { rate: { type: 'string', default: '2000' }, seconds: { type: 'string', default: '60' } },
  } as const;
  const { values } = parseCommandLine(command);
  const whole = (name: 'rate' | 'seconds') => {
    const value = Number(values[name]);
    return Number.isInteger(value) && value >= 1
      ? value
      : exitWithUsage(command, `--${name} must be a whole number of at least 1, not ${values[name]}`);
  };
  const cost = measureReconcilerCost(whole('rate'), whole('seconds'));
  console.log(describeReconcilerCost(cost));
  if (!cost.ledgerPassed) process.exit(1);
}
