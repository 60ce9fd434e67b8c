import { spawnSync } from 'node:child_process';
import { autocannonLoad } from './autocannon-load.ts';
import { wrkLoad, wrkVersion } from './wrk-load.ts';
import type { LoadResult, PurchaseLoadOptions } from './load-result.ts';

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
  if (wanted !== undefined && wanted !== 'wrk' && wanted !== 'autocannon')
    throw new Error(`BENCH_LOADGEN must be wrk or autocannon, not ${wanted}`);
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
