import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SOURCE_NODE_ARGS, spawnGateway, spawnInGroup, type AppProcess } from '@flashsale/harness';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export interface BenchServer {
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

/**
 * A node:http + EVALSHA baseline (bench/baseline-server.ts), as a process of its own like the gateway:
 * bare (`none`: the buyer from a header) or authenticated (`hs256`: the buyer from a checked token).
 */
export async function startBaseline(env: NodeJS.ProcessEnv, auth: 'none' | 'hs256', nodeArgs: string[] = []): Promise<BenchServer> {
  const child = spawnInGroup(process.execPath, [...nodeArgs, ...SOURCE_NODE_ARGS, 'bench/baseline-server.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, BASELINE_AUTH: auth, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = /"port":(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`baseline server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => (child.kill('SIGTERM'), exited) };
}

/** A gateway process (apps/gateway/src/main.ts, of this checkout or of the one at `root`) with `workers` cluster processes; resolves once all listen. */
export async function startGatewayProcess(
  env: NodeJS.ProcessEnv,
  workers = 1,
  extraNodeOptions = '',
  root?: string,
): Promise<BenchServer & { process: AppProcess }> {
  const gateway = await spawnGateway(
    {
      ...env,
      GATEWAY_WORKERS: String(workers),
      LOG_LEVEL: 'info',
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${extraNodeOptions}`.trim(),
    },
    'source',
    root,
  );
  const deadline = Date.now() + 20_000;
  while (gateway.logs.filter((line) => line.msg === 'gateway listening').length < workers) {
    if (Date.now() > deadline) throw new Error('gateway processes did not all listen');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // Load starts once /readyz answers 200, as a balancer's would: the gateway listens before its stores
  // have answered, and its first MySQL query (the probe's) loads Prisma's query compiler, tens of ms of
  // its main thread that would otherwise land in the first run.
  while (
    (await fetch(`${gateway.url}/readyz`).then(
      (res) => res.status,
      () => 0,
    )) !== 200
  ) {
    if (Date.now() > deadline) throw new Error('the gateway did not become ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url: gateway.url, pid: gateway.child.pid!, process: gateway, stop: () => gateway.kill('SIGTERM') };
}

/** A process and its children (the processes of a cluster). */
function processTree(pid: number): number[] {
  try {
    return [pid, ...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)];
  } catch {
    return [pid];
  }
}

function procFile(pid: number, name: string): string {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch {
    return '';
  }
}

/** Peak resident memory (VmHWM) of a process and of its children (cluster workers), in MiB. */
export function peakRssMiB(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + Number(/VmHWM:\s+(\d+) kB/.exec(procFile(p, 'status'))?.[1] ?? 0) / 1024, 0);
}

/** USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) in a /proc stat file's text: fields 14 and 15, counted after the command name, which may itself hold spaces. */
function statCpuSeconds(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / TICKS_PER_SECOND;
}

/**
 * CPU seconds (user + system, every thread) a process and its children have used so far. Differences
 * of it over a load run, per request answered, say what a server costs whatever else the shared box
 * runs meanwhile, which the throughput does not.
 */
export function cpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + statCpuSeconds(procFile(p, 'stat')), 0);
}

/**
 * CPU seconds (user + system) used so far by each thread of a process, summed by thread name (`main
 * thread`; `V8Worker`, the collector's and compiler's helpers; `libuv-worker`; ...): where a
 * server's CPU goes beside its JavaScript, which a --cpu-prof profile (the main thread only) does not see.
 */
export function cpuSecondsByThread(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const task of tasks) {
    const stat = procFile(pid, `task/${task}/stat`);
    if (stat === '') continue;
    const name = task === String(pid) ? 'main thread' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    byName.set(name, (byName.get(name) ?? 0) + statCpuSeconds(stat));
  }
  return byName;
}

/**
 * CPU seconds (user + system) of a process's main thread alone: the JavaScript, the event loop and the
 * system calls it makes, without V8's helper threads. A Node server under a closed loop is as fast as
 * this thread: when it is busy all the time, its time per request is the server's rate.
 */
export function mainThreadCpuSeconds(pid: number): number {
  return statCpuSeconds(procFile(pid, `task/${pid}/stat`));
}

/**
 * The read-like and write-like system calls a process has made so far (`syscr`, `syscw` of
 * /proc/<pid>/io: read, readv, recv..., write, writev, send...): counts, so a difference between two
 * servers is exact where their CPU moves with the box.
 */
export function ioSyscalls(pid: number): { reads: number; writes: number } {
  const io = procFile(pid, 'io');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? Number.NaN);
  return { reads: field('syscr'), writes: field('syscw') };
}
