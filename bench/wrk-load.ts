import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadResult, PurchaseLoadOptions } from './load.ts';

const SCRIPT = fileURLToPath(new URL('./wrk/purchase.lua', import.meta.url));

/** wrk's version when it is on PATH, else undefined. */
export function wrkVersion(): string | undefined {
  // `wrk --version` prints its banner and exits 1.
  const out = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (out.error) return undefined;
  return /^wrk (\S+)/.exec(`${out.stdout}${out.stderr}`)?.[1] ?? 'unknown version';
}

// One buyers file per list of buyers, written once per process and removed when it exits.
let dir: string | undefined;
const files = new WeakMap<PurchaseLoadOptions['buyers'], string>();
function buyersFile(buyers: PurchaseLoadOptions['buyers']): string {
  let file = files.get(buyers);
  if (file) return file;
  if (!dir) {
    const made = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
    dir = made;
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  file = join(dir, `buyers-${buyers.length}-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(file, buyers.map((buyer) => `${buyer.id} ${buyer.token}\n`).join(''));
  files.set(buyers, file);
  return file;
}

interface WrkReport {
  requests: number;
  durationUs: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p50: number; p90: number; p99: number; max: number };
}

/**
 * The purchase load with wrk, as a process of its own: one thread (`-t1`), `connections` keep-alive
 * connections for `seconds`, each request a purchase by the next buyer (bench/wrk/purchase.lua).
 */
export function wrkLoad(options: PurchaseLoadOptions): Promise<LoadResult> {
  const args = ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--latency', '-s', SCRIPT, options.url, '--', buyersFile(options.buyers), String(options.saleId)];
  if (options.cycle !== undefined) args.push(String(options.cycle));
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`wrk failed: ${error.message}\n${stderr}`));
      const line = stdout.trim().split('\n').at(-1) ?? '';
      let report: WrkReport;
      try {
        report = JSON.parse(line) as WrkReport;
      } catch {
        return reject(new Error(`wrk printed no report:\n${stdout}\n${stderr}`));
      }
      const { errors } = report;
      resolve({
        requests: report.requests,
        rps: report.requests / (report.durationUs / 1e6),
        p50: report.latencyUs.p50 / 1000,
        p99: report.latencyUs.p99 / 1000,
        ok: report.requests - errors.status,
        refused: errors.status,
        errors: errors.connect + errors.read + errors.write + errors.timeout,
      });
    });
  });
}
