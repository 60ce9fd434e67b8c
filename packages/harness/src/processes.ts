import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisTarget } from '@flashsale/redis-store';
import { killGroup, spawnInGroup } from './process-group.ts';
import { TEST_RUN_VARIABLE } from './test-run.ts';

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

/** What a start-up or log wait looks for: a predicate, and the words a timeout names it by. */
export interface LogWait {
  matches: (line: Record<string, unknown>) => boolean;
  /** Says what was awaited when the wait fails (for example `"gateway listening"`). */
  what: string;
}

/** How long a wait for a log line lasts unless told: generous, as a busy machine starts processes slowly. */
export const LOG_WAIT_MS = 120_000;

/** A real app process (`apps/<name>/src/main.ts`, or its build), its JSON log lines collected for assertions. */
export interface AppProcess {
  child: ChildProcess;
  logs: Record<string, unknown>[];
  /**
   * Resolves with the first log line that matches (a string: the line whose `msg` it is). A timeout or
   * an exit first rejects with an error
   * naming what was awaited and the process's last lines of stdout and stderr.
   */
  waitForLog(wait: string | LogWait, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<number | NodeJS.Signals>;
  /**
   * Sends `signal` to the process (not its group: a graceful stop is the process's own to pass on), and
   * once it has exited, SIGKILLs whatever of its group is left.
   */
  kill(signal?: NodeJS.Signals): Promise<number | NodeJS.Signals>;
}

/**
 * The environment that points a spawned process at `target` (from redisTargetOf(config)): REDIS_URL,
 * REDIS_CLUSTER_NODES for a cluster, or REDIS_SENTINELS and REDIS_SENTINEL_MASTER. The variables of the
 * other kinds are emptied (an empty variable counts as unset), so one the spawner inherited cannot take
 * the process elsewhere; a cluster or sentinels need no REDIS_URL, which is then ignored.
 */
export function redisEnvOf(target: RedisTarget): NodeJS.ProcessEnv {
  const list = (nodes: { host: string; port: number }[]) => nodes.map(({ host, port }) => `${host}:${port}`).join(',');
  if ('url' in target) return { REDIS_URL: target.url, REDIS_CLUSTER_NODES: '', REDIS_SENTINELS: '' };
  if ('sentinels' in target)
    return { REDIS_SENTINELS: list(target.sentinels), REDIS_SENTINEL_MASTER: target.masterName, REDIS_CLUSTER_NODES: '' };
  return { REDIS_CLUSTER_NODES: list(target.clusterNodes), REDIS_SENTINELS: '' };
}

/**
 * Deadlines of the processes a test starts, unless the test sets its own: sized for a machine that runs
 * other work beside the suite, where a process may wait seconds for a core and a 1 s deadline would
 * answer 503 for nothing (the request deadline stays under RECONCILER_CREATE_GRACE_MS, 30 s). A test
 * whose subject is a deadline sets it. Outside a test run (the demo, the bench, the load runners) the
 * processes keep the production defaults.
 */
const TEST_RUN_DEADLINES: NodeJS.ProcessEnv = {
  REQUEST_DEADLINE_MS: '20000',
  REDIS_COMMAND_TIMEOUT_MS: '10000',
  DB_STATEMENT_TIMEOUT_MS: '15000',
};

/** `root`: the checkout the app runs from, default this one (the pipeline bench runs an older revision's beside it). */
export function spawnApp(
  app: 'gateway' | 'worker' | 'reconciler',
  env: NodeJS.ProcessEnv,
  from: AppSource = 'source',
  root = ROOT,
): AppProcess {
  const args = from === 'build' ? ['scripts/start.mjs', app] : [...SOURCE_NODE_ARGS, `apps/${app}/src/main.ts`];
  const deadlines = process.env[TEST_RUN_VARIABLE] ? TEST_RUN_DEADLINES : {};
  const child = spawnInGroup(process.execPath, args, {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'info', ...deadlines, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  const waiters: { match: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }[] = [];
  let buffered = '';
  let stderr = '';
  const lastLines = (text: string) => text.split('\n').filter(Boolean).slice(-15).join('\n') || '(nothing)';
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
    waitForLog(wait, timeoutMs = LOG_WAIT_MS) {
      const { matches: match, what } =
        typeof wait === 'string' ? { matches: (l: Record<string, unknown>) => l.msg === wait, what: `"${wait}"` } : wait;
      const found = logs.find(match);
      if (found) return Promise.resolve(found);
      const failure = (why: string) =>
        new Error(
          `${app} (pid ${String(child.pid)}): ${why} while waiting for ${what}\n` +
            `--- last stdout lines:\n${lastLines([...logs.slice(-15).map((l) => JSON.stringify(l)), buffered].join('\n'))}\n` +
            `--- last stderr lines:\n${lastLines(stderr.slice(-4000))}`,
        );
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(failure(`no such line within ${timeoutMs} ms`)), timeoutMs);
        void exited.then((status) => {
          clearTimeout(timer);
          reject(failure(`exited (${status})`));
        });
        waiters.push({
          match,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      });
    },
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const status = await exited;
      killGroup(child);
      return status;
    },
  };
}

/**
 * Set only by the clean-up check (test/e2e/test-run-cleanup.test.ts) to make every start fail: `startup`
 * fails the start-up wait (the process is killed there), `abandon` fails the start and drops the
 * process, which then only the safety nets stop (the test file's end, the test process's exit).
 */
const FAIL_ON_PURPOSE_VARIABLE = 'FLASHSALE_FAIL_ON_PURPOSE';
const FAIL_ON_PURPOSE = process.env[FAIL_ON_PURPOSE_VARIABLE];

/**
 * Waits for `app`'s start-up line; if it does not come (a timeout, an early exit), the process and its
 * whole group are killed before the error is passed on, so a failed start leaves nothing running.
 */
async function started(app: AppProcess, what: string): Promise<Record<string, unknown>> {
  let line: Record<string, unknown>;
  try {
    line = await app.waitForLog(what);
    if (FAIL_ON_PURPOSE === 'startup')
      throw new Error(`failing on purpose (${FAIL_ON_PURPOSE_VARIABLE}=startup) after ${app.child.pid} logged "${what}"`);
  } catch (error) {
    await app.kill('SIGKILL');
    throw error;
  }
  if (FAIL_ON_PURPOSE === 'abandon')
    throw new Error(`failing on purpose (${FAIL_ON_PURPOSE_VARIABLE}=abandon): ${app.child.pid} left running for the safety nets to stop`);
  return line;
}

/**
 * A gateway process on a free port (its metrics on another); resolves once it listens. Every request of
 * a test, a demo or a load run comes from this one machine's address, so the per-address budgets are
 * off unless the caller sets it.
 */
export async function spawnGateway(
  env: NodeJS.ProcessEnv,
  from: AppSource = 'source',
  root?: string,
): Promise<AppProcess & { url: string }> {
  const gateway = spawnApp(
    'gateway',
    {
      PORT: '0',
      METRICS_PORT: '0',
      RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0',
      PUBLIC_READS_PER_ADDRESS_PER_SECOND: '0',
      QUEUE_JOINS_PER_ADDRESS_PER_SECOND: '0',
      ...env,
    },
    from,
    root,
  );
  const line = await started(gateway, 'gateway listening');
  return Object.assign(gateway, { url: `http://127.0.0.1:${String(line.port)}` });
}

/** A worker process; resolves once it has started its loop. */
export async function spawnWorker(env: NodeJS.ProcessEnv, from: AppSource = 'source', root?: string): Promise<AppProcess> {
  const worker = spawnApp('worker', { WORKER_PORT: '0', ...env }, from, root);
  await started(worker, 'worker started');
  return worker;
}

/** A reconciler process (metrics on a free port); resolves once its loops run. */
export async function spawnReconciler(env: NodeJS.ProcessEnv, from: AppSource = 'source', root?: string): Promise<AppProcess> {
  const reconciler = spawnApp('reconciler', { RECONCILER_PORT: '0', ...env }, from, root);
  await started(reconciler, 'reconciler started');
  return reconciler;
}
