import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { loadConfigOrExit, parseCommandLine, type Config } from '@flashsale/config';
import { createLogger, serveMetricsPort, type Logger, type MetricsSource, type Readiness } from '@flashsale/runtime';
import { refuseEvictingRedis, type ScriptedRedis } from '@flashsale/redis-store';
import { checkConnectionBudget, type ProcessRole } from '@flashsale/order-store';

/** A process as started: its role, its configuration, its logger. */
export interface ProcessBoot<R extends ProcessRole = ProcessRole> {
  role: R;
  config: Config;
  logger: Logger;
}

/**
 * The start every process shares: its command line (no options; `--help` prints `usage`), the
 * configuration (an invalid one stops the process listing every bad variable), the logger, and MySQL's
 * connection budget, checked in the background: a MySQL that is down now is checked when it answers,
 * never holding up the start. A gateway's supervisor judges for all its GATEWAY_WORKERS processes; the
 * processes it forks do not judge again.
 */
export function bootProcess<R extends ProcessRole>(role: R, usage: string): ProcessBoot<R> {
  parseCommandLine({ usage });
  const config = loadConfigOrExit();
  const logger = createLogger(role, config.LOG_LEVEL);
  if (cluster.isPrimary) void checkConnectionBudget(config, role, logger, { processes: role === 'gateway' ? config.GATEWAY_WORKERS : 1 });
  return { role, config, logger };
}

/** The variable that sets each role's internal port, named in the line logged when it cannot be bound. */
const INTERNAL_PORT = { gateway: 'METRICS_PORT', worker: 'WORKER_PORT', reconciler: 'RECONCILER_PORT' } as const satisfies Record<
  ProcessRole,
  keyof Config
>;

/** The internal port as served: `port` none when it could not be bound (see serveMetricsPort). */
export interface InternalPort {
  server?: Server;
  port: number | undefined;
}

/**
 * The process's internal port: `/metrics`, `/healthz` and, given `readiness`, `/readyz`. Served before
 * anything waits for Redis or MySQL, so /healthz answers while either is away and /readyz says so. A
 * port already taken (a second process of the role on the host with the default) is logged and the
 * process goes on without it: its work matters more than being scraped.
 */
export function serveInternalPort(proc: ProcessBoot, source: MetricsSource, readiness?: () => Promise<Readiness>): Promise<InternalPort> {
  const variable = INTERNAL_PORT[proc.role];
  return serveMetricsPort(source, proc.config[variable], {
    logger: proc.logger,
    role: proc.role,
    variable,
    config: proc.config,
    readiness,
  });
}

/**
 * The line that says the process has taken up its work; then, in the background once Redis answers,
 * the eviction-policy check, which stops the process on an evicting maxmemory-policy (redis-memory.ts).
 */
export function announceStarted(proc: ProcessBoot, redis: ScriptedRedis, fields: Record<string, unknown>, message: string): void {
  proc.logger.info(fields, message);
  void refuseEvictingRedis(redis, proc.logger);
}
