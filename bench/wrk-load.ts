import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadResult, PurchaseLoadOptions } from './load-result.ts';

const SCRIPT = fileURLToPath(new URL('./wrk/purchase.lua', import.meta.url));
const REQUESTS_SCRIPT = fileURLToPath(new URL('./wrk/requests.lua', import.meta.url));

/** wrk's version when it is on PATH, else undefined. */
export function wrkVersion(): string | undefined {
  // `wrk --version` prints its banner and exits 1.
  const out = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (out.error) return undefined;
  return /^wrk (\S+)/.exec(`${out.stdout}${out.stderr}`)?.[1] ?? 'unknown version';
}

// One buyers file per list of buyers, written once per process; the directory is removed when it exits.
let dir: string | undefined;
const files = new WeakMap<PurchaseLoadOptions['buyers'], string>();
function tempDir(): string {
  if (!dir) {
    const made = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
    dir = made;
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  return dir;
}
function buyersFile(buyers: PurchaseLoadOptions['buyers']): string {
  let file = files.get(buyers);
  if (file) return file;
  file = join(tempDir(), `buyers-${buyers.length}-${Math.random().toString(36).slice(2)}.txt`);
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
  const scriptArgs = [buyersFile(options.buyers), String(options.saleId)];
  if (options.cycle !== undefined) scriptArgs.push(String(options.cycle));
  return wrkRun(SCRIPT, options.url, scriptArgs, options.connections, options.seconds);
}

/**
 * Any other load with wrk: each request the next line of `requests`, in turn (bench/wrk/requests.lua),
 * a line being the method, the path and the headers. The answers are counted as wrkLoad counts them.
 */
export function wrkRequests(
  url: string,
  requests: { method: string; path: string; headers?: Record<string, string> }[],
  connections: number,
  seconds: number,
): Promise<LoadResult> {
  const file = join(tempDir(), `requests-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(
    file,
    requests
      .map(
        ({ method, path, headers = {} }) =>
          [`${method} ${path}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)].join('\t') + '\n',
      )
      .join(''),
  );
  return wrkRun(REQUESTS_SCRIPT, url, [file], connections, seconds).finally(() => rmSync(file, { force: true }));
}

function wrkRun(script: string, url: string, scriptArgs: string[], connections: number, seconds: number): Promise<LoadResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url, '--', ...scriptArgs];
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
