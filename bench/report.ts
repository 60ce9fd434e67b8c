import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export type PathName = 'accept' | 'duplicate' | 'sold_out';

export interface Summary {
  /** Medians of the runs. */
  rps: number;
  p50: number;
  p99: number;
  /** CPU time (user + system) of the server process per request answered, in microseconds. */
  cpuUsPerRequest?: number;
  runs: unknown[];
}

/** One `npm run bench`, as appended to bench/results.json; a part left out (BENCH_PARTS) is absent. */
export interface BenchResults {
  date: string;
  machine: string;
  node: string;
  command: string;
  /** HEAD when the bench ran, `+changes` when the working tree differed from it. */
  commit: string;
  loadGenerator: string;
  settings: Record<string, number>;
  paths?: Record<
    PathName,
    {
      bare: Summary;
      authenticated: Summary;
      gateway: Summary;
      /** Medians of each round's ratio (the contenders of a round run back to back). */
      ratios: { gatewayToAuthenticated: number; gatewayToBare: number; authenticatedToBare: number };
    }
  >;
  scaling?: Record<string, Summary>;
  fsync?: { always: Summary; everysec: Summary };
  drain?: { workerSeconds: number; rawSeconds: number; workerRuns: number[]; rawRuns: number[] };
  peakRssMiB?: { gateway: number; bare: number; authenticated: number };
}

const RESULTS = fileURLToPath(new URL('./results.json', import.meta.url));
const DOC = fileURLToPath(new URL('../docs/BENCHMARKS.md', import.meta.url));
const START = '<!-- bench-results:start -->';
const END = '<!-- bench-results:end -->';

/** The goals the table is read against (issue 12): against the authenticated baseline. */
const GOALS: Record<PathName, { goal: number; floor: number }> = {
  accept: { goal: 0.9, floor: 0.8 },
  duplicate: { goal: 0.9, floor: 0.8 },
  sold_out: { goal: 1, floor: 1 },
};

const ratio = (value: number) => value.toFixed(2);
const latency = (s: Summary) => `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}`;
const verdict = (value: number, { goal, floor }: { goal: number; floor: number }) =>
  value >= goal ? `met (goal ${goal})` : value >= floor ? `above the floor ${floor}, below the goal ${goal}` : `**not met** (floor ${floor})`;

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
  }
  if (r.peakRssMiB) lines.push('', `Peak RSS under load: gateway ${r.peakRssMiB.gateway} MiB, bare baseline ${r.peakRssMiB.bare} MiB, authenticated baseline ${r.peakRssMiB.authenticated} MiB.`);
  if (r.scaling) {
    lines.push('', '| GATEWAY_WORKERS, accept path | req/s | p50 / p99 ms |', '|---|---|---|', ...Object.entries(r.scaling).map(([workers, s]) => `| ${workers} | ${s.rps} | ${latency(s)} |`));
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
  return lines.join('\n');
}

/**
 * Appends the run to bench/results.json (every run, oldest first) and prints its tables; a run of every
 * part also replaces the results section of docs/BENCHMARKS.md.
 */
export function writeResults(results: BenchResults): void {
  const history = JSON.parse(readFileSync(RESULTS, 'utf8')) as { runs: unknown[] };
  history.runs.push(results);
  writeFileSync(RESULTS, `${JSON.stringify(history, null, 2)}\n`);
  console.log(`\n${resultsMarkdown(results)}`);
  if (!results.paths || !results.scaling || !results.fsync || !results.drain) return;
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/BENCHMARKS.md lacks the ${START} ... ${END} markers`);
  writeFileSync(DOC, `${doc.slice(0, start + START.length)}\n${resultsMarkdown(results)}\n${doc.slice(end)}`);
}
