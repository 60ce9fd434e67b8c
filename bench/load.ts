import { spawnSync } from 'node:child_process';
import { autocannonLoad } from './autocannon-load.ts';
import { wrkLoad, wrkVersion } from './wrk-load.ts';

/** One closed-loop load run against one server. */
export interface LoadResult {
  /** Answers received within the run. */
  requests: number;
  rps: number;
  /** Latency percentiles in ms. */
  p50: number;
  p99: number;
  /** Answers with a 2xx status, and the rest (refusals: 4xx, 5xx). */
  ok: number;
  refused: number;
  /** Requests without an answer: connection errors and timeouts. */
  errors: number;
  /** Answers by status, where the load generator counts them (autocannon; wrk counts only 2xx and the rest). */
  statuses?: Record<string, number>;
}

export interface PurchaseLoadOptions {
  url: string;
  saleId: number;
  /** The buyers (id and token), each request the next one, round robin. */
  buyers: { id: string; token: string }[];
  /** Cycle through the first `cycle` buyers only (the duplicate path), default all of them. */
  cycle?: number;
  connections: number;
  seconds: number;
}

/** A load generator: its name as the table prints it, and the run. */
export interface LoadGenerator {
  name: string;
  run(options: PurchaseLoadOptions): Promise<LoadResult>;
}

/**
 * wrk when it is installed (a C load generator, one thread: it takes a fraction of a core, so the two
 * cores go to the servers under test), autocannon otherwise (a Node process that takes about a core of
 * its own and caps every contender near the same figure). BENCH_LOADGEN=wrk|autocannon chooses.
 */
export function chooseLoadGenerator(wanted = process.env.BENCH_LOADGEN): LoadGenerator {
  if (wanted !== undefined && wanted !== 'wrk' && wanted !== 'autocannon') throw new Error(`BENCH_LOADGEN must be wrk or autocannon, not ${wanted}`);
  const wrk = wanted === 'autocannon' ? undefined : wrkVersion();
  if (wanted === 'wrk' && wrk === undefined) throw new Error('BENCH_LOADGEN=wrk, but wrk is not on PATH');
  if (wrk !== undefined) return { name: `wrk ${wrk} -t1`, run: wrkLoad };
  return { name: `autocannon ${autocannonVersion()}`, run: autocannonLoad };
}

function autocannonVersion(): string {
  const out = spawnSync(process.execPath, ['-p', 'require("autocannon/package.json").version'], { encoding: 'utf8' });
  return out.stdout.trim() || 'unknown version';
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
