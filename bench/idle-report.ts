import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { IdleResult } from './idle-measure.ts';

/** One N that could not be measured, and why. */
export interface IdleFailure {
  sales: number;
  error: string;
}

/** One `npm run bench:idle`, as appended to bench/results-idle.json. */
export interface IdleRun {
  date: string;
  machine: string;
  node: string;
  command: string;
  /** HEAD when the bench ran, `+changes` when tracked files differed from it (listed in `changes`). */
  commit: string;
  changes: string[];
  /** The machine's one-minute load average when the run started. */
  loadAverage: number;
  settings: { seconds: number; settleSeconds: number; concurrency: number; purchases: number; pauseMs: number };
  results: (IdleResult | IdleFailure)[];
}

export const isFailure = (r: IdleResult | IdleFailure): r is IdleFailure => 'error' in r;

const fixed = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

/** The run as a markdown table, one row per N, and a line per N of its busiest Redis commands. */
export function idleMarkdown(run: IdleRun): string {
  const lines = [
    `${run.date.slice(0, 16).replace('T', ' ')} UTC, \`${run.command}\` on ${run.commit}; load average ${run.loadAverage} at the start. ${run.machine}; Node ${run.node}.`,
    `Idle window ${run.settings.seconds} s, ${run.settings.settleSeconds} s after the last create; ${run.settings.purchases} purchases ${run.settings.pauseMs} ms apart. CPU in % of one core; machine busy in % of all cores; others' CPU: the machine's busy time but this system's processes and Redis (other tenants), % of one core; waiting for a core: time the process's threads were ready to run but had no core, % of the window (high: its CPU figure understates its cost).`,
    '',
    "| live sales | create (s, per s) | worker CPU % | reconciler CPU % | gateway CPU % | Redis commands/s | Redis CPU % | 202 -> order median / max ms | orders | load avg start / end | machine busy % | others' CPU % | waiting for a core %, worker / reconciler |",
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of run.results) {
    if (isFailure(r)) {
      lines.push(`| ${r.sales} | failed: ${r.error.replaceAll('|', '\\|').replaceAll('\n', ' ').slice(0, 300)} | | | | | | | | | | | |`);
      continue;
    }
    lines.push(
      `| ${r.sales} | ${fixed(r.create.seconds)} (${r.create.perSecond}/s) | ${fixed(r.cpuPercent.worker)} | ${fixed(r.cpuPercent.reconciler)} | ${fixed(r.cpuPercent.gateway)} | ${r.redis.commandsPerSecond} | ${fixed(r.cpuPercent.redis)} | ${fixed(r.toOrder.medianMs)} / ${fixed(r.toOrder.maxMs)} | ${r.toOrder.orders}/${r.toOrder.purchases} | ${r.window.loadAverageStart} / ${r.window.loadAverageEnd} | ${fixed(r.window.machineBusyPercent, 0)} | ${fixed(r.window.othersCpuPercent, 0)} | ${fixed(r.cpuWaitPercent.worker, 0)} / ${fixed(r.cpuWaitPercent.reconciler, 0)} |`,
    );
  }
  const measured = run.results.filter((r): r is IdleResult => !isFailure(r));
  if (measured.length > 0) {
    lines.push(
      '',
      'Busiest Redis commands over the window, per second (INFO commandstats: commands run by scripts and MULTI counted one by one):',
      '',
    );
    for (const r of measured) {
      const top = Object.entries(r.redis.commandsByName)
        .slice(0, 6)
        .map(([name, perSecond]) => `${name} ${perSecond}`);
      lines.push(
        `- ${r.sales} sales: ${top.join(', ') || 'none'}; ${r.publishedSales} published, ${r.checkpointedSales} checkpointed by the reconciler`,
      );
    }
  }
  return lines.join('\n');
}

/** Appends the run to `path` (`{ runs: [...] }`, oldest first), creating the file if needed. */
export function appendIdleRun(path: string, run: IdleRun): void {
  const history = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as { runs: unknown[] }) : { runs: [] };
  history.runs.push(run);
  writeFileSync(path, `${JSON.stringify(history, null, 2)}\n`);
}
