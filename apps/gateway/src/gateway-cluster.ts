import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '@flashsale/runtime';
import { DEFAULT_RESTART_POLICY, RestartPolicy, type RestartPolicyOptions } from './restart-policy.ts';

export interface GatewayClusterOptions {
  /** Gateway processes, GATEWAY_WORKERS. */
  count: number;
  /** SHUTDOWN_TIMEOUT_MS: past it, processes that have not exited are killed. */
  shutdownTimeoutMs: number;
  /** Added to each gateway process's environment. */
  env?: NodeJS.ProcessEnv;
  restart?: RestartPolicyOptions;
}

/**
 * GATEWAY_WORKERS > 1: this process only supervises; `count` gateway processes share the port (the
 * primary hands out connections round-robin). A gateway process holds nothing another one needs (its
 * verdict cache and rate limiter are per process), so one that dies is replaced, after a wait that grows
 * while they keep dying (restart-policy.ts); if they keep dying before they listen, the supervisor stops
 * the others and exits 1.
 */
export function runGatewayCluster(options: GatewayClusterOptions, logger: Logger): void {
  const policy = new RestartPolicy(options.restart ?? DEFAULT_RESTART_POLICY);
  const forkedAt = new Map<number, number>();
  const listened = new Set<number>();
  const replacements = new Set<NodeJS.Timeout>();
  let stopping = false;

  const fork = () => forkedAt.set(cluster.fork(options.env).id, Date.now());
  const running = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());

  cluster.on('listening', (worker) => listened.add(worker.id));
  cluster.on('exit', (worker, code, signal) => {
    const death = { listened: listened.delete(worker.id), upMs: Date.now() - (forkedAt.get(worker.id) ?? Date.now()) };
    forkedAt.delete(worker.id);
    if (stopping) return;
    const decision = policy.afterDeath(death);
    if ('giveUp' in decision) {
      logger.fatal(
        { worker: worker.id, code, signal, startFailures: decision.startFailures },
        'gateway processes keep dying before they listen, giving up',
      );
      stopAll(undefined, 'SIGTERM', 1);
      return;
    }
    logger.error(
      { worker: worker.id, code, signal, ...death, restartInMs: decision.restartInMs },
      'gateway process died, starting another',
    );
    const replacement = setTimeout(() => {
      replacements.delete(replacement);
      fork();
    }, decision.restartInMs);
    replacements.add(replacement);
  });

  /**
   * Each process finishes its requests in flight, then exits; the supervisor goes last, with `exitCode`.
   * The whole stop has SHUTDOWN_TIMEOUT_MS: a process still there then (hung, or stopped by a debugger
   * or SIGSTOP, so no signal of ours is handled) is SIGKILLed and the supervisor exits 1.
   */
  const stopAll = (signal: NodeJS.Signals | undefined, forward: NodeJS.Signals | undefined, exitCode: number) => {
    stopping = true;
    for (const replacement of replacements) clearTimeout(replacement);
    replacements.clear();
    if (signal) logger.info({ signal }, 'stopping gateway processes');
    const workers = running();
    const done = () => {
      logger.info('stopped');
      process.exit(exitCode);
    };
    if (workers.length === 0) return done();
    let left = workers.length;
    for (const worker of workers) {
      worker.once('exit', () => {
        left -= 1;
        if (left === 0) done();
      });
      if (forward) worker.process.kill(forward);
    }
    setTimeout(() => {
      const stuck = running();
      logger.error(
        { timeoutMs: options.shutdownTimeoutMs, pids: stuck.map((w) => w.process.pid) },
        'gateway processes still running at the shutdown deadline (SHUTDOWN_TIMEOUT_MS), killing them',
      );
      for (const worker of stuck) worker.process.kill('SIGKILL');
      process.exit(1);
    }, options.shutdownTimeoutMs).unref();
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal while stopping, exiting now');
      for (const worker of running()) worker.process.kill('SIGKILL');
      process.exit(1);
    }
    // Ctrl-C reaches the whole process group, the gateways included; SIGTERM (an orchestrator) only us.
    stopAll(signal, signal === 'SIGTERM' ? 'SIGTERM' : undefined, 0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  for (let i = 0; i < options.count; i += 1) fork();
}
