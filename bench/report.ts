import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface Summary {
  rps: number;
  p50: number;
  p99: number;
  runs: unknown[];
}

export interface BenchResults {
  date: string;
  machine: string;
  node: string;
  command: string;
  settings: Record<string, number>;
  paths: Record<'accept' | 'sold_out' | 'duplicate', { baseline: Summary; gateway: Summary }>;
  scaling: Record<string, Summary>;
  fsync: { always: Summary; everysec: Summary };
  drain: { workerSeconds: number; rawSeconds: number; workerRuns: number[]; rawRuns: number[] };
  peakRssMiB: { gateway: number; baseline: number };
}

const RESULTS = fileURLToPath(new URL('./results.json', import.meta.url));
const DOC = fileURLToPath(new URL('../docs/BENCHMARKS.md', import.meta.url));
const START = '<!-- bench-results:start -->';
const END = '<!-- bench-results:end -->';

const ratio = (value: number) => value.toFixed(2);
const verdict = (value: number, target: number) => (value >= target ? `met (>= ${target})` : `**not met** (target ${target})`);

/** The results table, as it goes between the markers of docs/BENCHMARKS.md. */
export function resultsMarkdown(r: BenchResults): string {
  const rows = (['accept', 'sold_out', 'duplicate'] as const).map((path) => {
    const { baseline, gateway } = r.paths[path];
    return `| ${path.replace('_', ' ')} | ${baseline.rps} | ${baseline.p50} / ${baseline.p99} | ${gateway.rps} | ${gateway.p50} / ${gateway.p99} | ${ratio(gateway.rps / baseline.rps)} |`;
  });
  const accept = r.paths.accept;
  const drainRatio = r.drain.rawSeconds / r.drain.workerSeconds;
  const scaling = Object.entries(r.scaling).map(([workers, s]) => `| ${workers} | ${s.rps} | ${s.p50} / ${s.p99} |`);
  return [
    `Date ${r.date.slice(0, 10)}; machine: ${r.machine}; Node ${r.node}; command \`${r.command}\``,
    `(${r.settings.seconds} s per run, ${r.settings.rounds} rounds alternating A B A B, ${r.settings.connections} connections, medians).`,
    '',
    '| path | (a) baseline req/s | p50 / p99 ms | (b) gateway req/s | p50 / p99 ms | b/a |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `**(c) accept path b/a = ${ratio(accept.gateway.rps / accept.baseline.rps)}**: ${verdict(accept.gateway.rps / accept.baseline.rps, 0.8)}.`,
    '',
    `**(d) drain of ${r.settings.drainRows} reservations** (medians of ${r.settings.drainRounds ?? r.settings.rounds} alternated runs): one worker ${r.drain.workerSeconds.toFixed(2)} s,`,
    `raw multi-row INSERTs ${r.drain.rawSeconds.toFixed(2)} s, ratio raw/worker = ${ratio(drainRatio)}: ${verdict(drainRatio, 0.7)}.`,
    '',
    `**(e) peak RSS** under load: gateway ${r.peakRssMiB.gateway} MiB (baseline server ${r.peakRssMiB.baseline} MiB).`,
    '',
    '| Redis AOF, accept path | req/s | p50 / p99 ms |',
    '|---|---|---|',
    `| appendfsync always | ${r.fsync.always.rps} | ${r.fsync.always.p50} / ${r.fsync.always.p99} |`,
    `| appendfsync everysec | ${r.fsync.everysec.rps} | ${r.fsync.everysec.p50} / ${r.fsync.everysec.p99} |`,
    `| always / everysec | ${ratio(r.fsync.always.rps / r.fsync.everysec.rps)} | |`,
    '',
    '| GATEWAY_WORKERS, accept path | req/s | p50 / p99 ms |',
    '|---|---|---|',
    ...scaling,
  ].join('\n');
}

export function writeResults(results: BenchResults): void {
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/BENCHMARKS.md lacks the ${START} ... ${END} markers`);
  writeFileSync(DOC, `${doc.slice(0, start + START.length)}\n${resultsMarkdown(results)}\n${doc.slice(end)}`);
  console.log(resultsMarkdown(results));
}
