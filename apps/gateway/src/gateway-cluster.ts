import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '@flashsale/config';

/**
 * GATEWAY_WORKERS > 1: this process only supervises; `count` gateway processes share the port (the
 * primary hands out connections round-robin). A gateway process holds nothing another one needs (its
 * verdict cache and rate limiter are per process), so one that dies is simply replaced.
 */
export function runGatewayCluster(count: number, logger: Logger): void {
  let stopping = false;
  const fork = (): Worker => cluster.fork();
  for (let i = 0; i < count; i += 1) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    logger.error({ worker: worker.id, code, signal }, 'gateway process died, starting another');
    fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'stopping gateway processes');
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    // Each process finishes its requests in flight, then exits; the supervisor goes last.
    let left = workers.length;
    if (left === 0) process.exit(0);
    for (const worker of workers) {
      worker.once('exit', () => {
        left -= 1;
        if (left === 0) {
          logger.info('stopped');
          process.exit(0);
        }
      });
      // Ctrl-C reaches the whole process group, the gateways included; SIGTERM (an orchestrator) only us.
      if (signal === 'SIGTERM') worker.process.kill('SIGTERM');
    }
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
