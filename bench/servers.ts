import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SOURCE_NODE_ARGS, spawnGateway, type AppProcess } from '@flashsale/harness';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export interface BenchServer {
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

/** The bare node:http + EVALSHA baseline, as a process of its own like the gateway. */
export async function startBaseline(env: NodeJS.ProcessEnv): Promise<BenchServer> {
  const child = spawn(process.execPath, [...SOURCE_NODE_ARGS, 'bench/baseline-server.ts'], { cwd: ROOT, env: { ...process.env, ...env, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'] });
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

/** A gateway process (apps/gateway/src/main.ts) with `workers` cluster processes; resolves once all listen. */
export async function startGatewayProcess(env: NodeJS.ProcessEnv, workers = 1, extraNodeOptions = ''): Promise<BenchServer & { process: AppProcess }> {
  const gateway = await spawnGateway({ ...env, GATEWAY_WORKERS: String(workers), LOG_LEVEL: 'info', NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${extraNodeOptions}`.trim() });
  const deadline = Date.now() + 20_000;
  while (gateway.logs.filter((line) => line.msg === 'gateway listening').length < workers) {
    if (Date.now() > deadline) throw new Error('gateway processes did not all listen');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url: gateway.url, pid: gateway.child.pid!, process: gateway, stop: () => gateway.kill('SIGTERM') };
}

/** Peak resident memory (VmHWM) of a process and of its children (cluster workers), in MiB. */
export function peakRssMiB(pid: number): number {
  const own = (p: number) => {
    try {
      return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0) / 1024;
    } catch {
      return 0;
    }
  };
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    children = [];
  }
  return own(pid) + children.reduce((sum, child) => sum + own(child), 0);
}
