import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisTarget } from '@flashsale/redis-store';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * Node's arguments to run a TypeScript entry from source: tsx, and the `@flashsale/source` export
 * condition, so the workspace packages it imports are their sources too, not a build that may be
 * missing or stale.
 */
export const SOURCE_NODE_ARGS = ['--conditions=@flashsale/source', '--import', 'tsx'];

/**
 * Where an app process runs from: its TypeScript sources (tests, demo), or the JavaScript of
 * `npm run build`, started exactly as the image starts it (`node scripts/start.mjs <role>`).
 */
export type AppSource = 'source' | 'build';

/** A real app process (`apps/<name>/src/main.ts`, or its build), its JSON log lines collected for assertions. */
export interface AppProcess {
  child: ChildProcess;
  logs: Record<string, unknown>[];
  /** Resolves with the first log line that matches. */
  waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<number | NodeJS.Signals>;
  kill(signal?: NodeJS.Signals): Promise<number | NodeJS.Signals>;
}

/**
 * The environment that points a spawned process at `target` (from redisTargetOf(config)): REDIS_URL, or
 * REDIS_CLUSTER_NODES for a cluster. The other variable is emptied for one server (an empty variable
 * counts as unset) so a REDIS_CLUSTER_NODES the spawner inherited cannot take the process elsewhere; a
 * cluster needs nothing else, REDIS_URL is then ignored.
 */
export function redisEnvOf(target: RedisTarget): NodeJS.ProcessEnv {
  if ('url' in target) return { REDIS_URL: target.url, REDIS_CLUSTER_NODES: '' };
  return { REDIS_CLUSTER_NODES: target.clusterNodes.map(({ host, port }) => `${host}:${port}`).join(',') };
}

export function spawnApp(app: 'gateway' | 'worker' | 'reconciler', env: NodeJS.ProcessEnv, from: AppSource = 'source'): AppProcess {
  const args = from === 'build' ? ['scripts/start.mjs', app] : [...SOURCE_NODE_ARGS, `apps/${app}/src/main.ts`];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  const waiters: { match: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }[] = [];
  let buffered = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const text = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        line = { msg: text };
      }
      logs.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code ?? 0)));
  return {
    child,
    logs,
    exited,
    waitForLog(match, timeoutMs = 20_000) {
      const found = logs.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${app}: no matching log line within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`)), timeoutMs);
        void exited.then((status) => reject(new Error(`${app} exited (${status}) before the expected log line; stderr: ${stderr.slice(-2000)}`)));
        waiters.push({
          match,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      });
    },
    kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * A gateway process on a free port (its metrics on another); resolves once it listens. Every request of
 * a test, a demo or a load run comes from this one machine's address, so the per-address rate limit is
 * off unless the caller sets it.
 */
export async function spawnGateway(env: NodeJS.ProcessEnv, from: AppSource = 'source'): Promise<AppProcess & { url: string }> {
  const gateway = spawnApp('gateway', { PORT: '0', METRICS_PORT: '0', RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0', ...env }, from);
  const line = await gateway.waitForLog((l) => l.msg === 'gateway listening');
  return Object.assign(gateway, { url: `http://127.0.0.1:${String(line.port)}` });
}

/** A worker process; resolves once it has started its loop. */
export async function spawnWorker(env: NodeJS.ProcessEnv, from: AppSource = 'source'): Promise<AppProcess> {
  const worker = spawnApp('worker', { WORKER_PORT: '0', ...env }, from);
  await worker.waitForLog((l) => l.msg === 'worker started');
  return worker;
}

/** A reconciler process (metrics on a free port); resolves once its loops run. */
export async function spawnReconciler(env: NodeJS.ProcessEnv, from: AppSource = 'source'): Promise<AppProcess> {
  const reconciler = spawnApp('reconciler', { RECONCILER_PORT: '0', ...env }, from);
  await reconciler.waitForLog((l) => l.msg === 'reconciler started');
  return reconciler;
}
