/**
 * The bench's `ready` part: how long each role takes from its spawn to its `/readyz` answering 200,
 * built (`node scripts/start.mjs <role>`, what the image runs, in production mode) and from its
 * TypeScript sources (`npm run gateway` and the like, what a developer runs). The stores are the run's,
 * local and idle; each role is spawned `settings.rounds` times, one at a time, and the median kept, with
 * the CPU the process had used by its first 200.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, spawnApp, type AppSource } from '@flashsale/harness';
import { median } from './load.ts';
import type { PartContext } from './part-context.ts';

const ROLES = ['gateway', 'worker', 'reconciler'] as const;
type Role = (typeof ROLES)[number];
/** The environment variable of each role's port that answers /readyz: the gateway's public port, the others' own. */
const READY_PORT: Record<Role, string> = { gateway: 'PORT', worker: 'WORKER_PORT', reconciler: 'RECONCILER_PORT' };

/**
 * Per role: the wall time from spawn to the first /readyz 200, and the CPU the process had used by then
 * (user + system, from /proc; absent where there is none). The CPU is the figure a busy machine moves
 * least: the wall time waits for a core whenever other work holds both.
 */
export type ReadyResults = Record<
  AppSource,
  Record<Role, { medianMs: number; runsMs: number[]; medianCpuMs?: number; runsCpuMs?: number[] }>
>;

/** The CPU (ms, user + system) process `pid` has used, from /proc/<pid>/stat; undefined where it cannot be read. */
function cpuMsOf(pid: number | undefined): number | undefined {
  try {
    // Fields 14 and 15 (utime, stime), in clock ticks of 1/100 s, after the command name in parentheses.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** Spawns `role` and resolves with the ms from the spawn to its first /readyz 200 (polled every 5 ms), and its CPU ms by then. */
async function timeToReady(role: Role, from: AppSource, env: NodeJS.ProcessEnv): Promise<{ ms: number; cpuMs: number | undefined }> {
  const port = await freePort();
  const roleEnv: NodeJS.ProcessEnv = { ...env, [READY_PORT[role]]: String(port), ...(role === 'gateway' && { METRICS_PORT: '0' }) };
  const started = performance.now();
  const app = spawnApp(role, roleEnv, from);
  try {
    for (;;) {
      if (app.child.exitCode !== null) throw new Error(`ready: the ${from} ${role} exited (${app.child.exitCode}) before it was ready`);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ready) return { ms: performance.now() - started, cpuMs: cpuMsOf(app.child.pid) };
      if (performance.now() - started > 60_000) throw new Error(`ready: the ${from} ${role} was not ready within 60 s`);
      await sleep(5);
    }
  } finally {
    await app.kill('SIGTERM');
  }
}

export async function readyPart({ settings, env, log }: PartContext): Promise<ReadyResults> {
  if (!existsSync('apps/gateway/dist') || !existsSync('apps/worker/dist') || !existsSync('apps/reconciler/dist')) {
    log('ready: building the apps first (npm run build)');
    execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  }
  // Production settings for the built roles, as the image runs them, with secrets of their own.
  const secrets = {
    AUTH_SECRET: randomBytes(24).toString('hex'),
    ADMIN_TOKEN: randomBytes(12).toString('hex'),
    PAYMENT_WEBHOOK_SECRET: randomBytes(24).toString('hex'),
  };
  const production = { ...env, NODE_ENV: 'production', ...secrets, LOG_LEVEL: 'warn' };
  const results = { build: {}, source: {} } as ReadyResults;
  for (const from of ['build', 'source'] as const) {
    for (const role of ROLES) {
      const runsMs: number[] = [];
      const runsCpuMs: number[] = [];
      for (let round = 0; round < settings.rounds; round += 1) {
        const { ms, cpuMs } = await timeToReady(role, from, from === 'build' ? production : { ...env, LOG_LEVEL: 'warn' });
        runsMs.push(Math.round(ms));
        if (cpuMs !== undefined) runsCpuMs.push(cpuMs);
      }
      const cpu = runsCpuMs.length === runsMs.length ? { medianCpuMs: median(runsCpuMs), runsCpuMs } : {};
      results[from][role] = { medianMs: median(runsMs), runsMs, ...cpu };
      const cpuSaid = cpu.medianCpuMs === undefined ? '' : `; ${cpu.medianCpuMs} ms of CPU by then (median of ${runsCpuMs.join(', ')})`;
      log(`ready: ${from} ${role} ${median(runsMs)} ms from spawn to /readyz 200 (median of ${runsMs.join(', ')})${cpuSaid}`);
    }
  }
  return results;
}
