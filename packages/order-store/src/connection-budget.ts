import { createConnection } from 'mariadb';
import type { Config } from '@flashsale/config';
import type { Logger } from '@flashsale/runtime';
import { poolConfigFromUrl } from './database-url.ts';

export type ProcessRole = 'gateway' | 'worker' | 'reconciler';

/** What one role may take of MySQL's connections, as far as one of its processes knows. */
export interface ConnectionBudget {
  role: ProcessRole;
  /** Most connections one process of the role opens: its *_DB_POOL_SIZE. */
  pool: number;
  /** Processes of the role this one knows of: the gateway supervisor's GATEWAY_WORKERS, otherwise 1. */
  processes: number;
  /** Connections the role must leave to the workers, which write the orders: a worker's pool; 0 for a worker. */
  workerHeadroom: number;
}

/** The server's side: its limit and the client connections open on it now. */
export interface ServerConnections {
  maxConnections: number;
  /** Client connections open, every user's, the reader's own not counted. */
  inUse: number;
}

export interface BudgetVerdict {
  fits: boolean;
  /** processes x pool: the most connections the role's processes may hold at once. */
  demand: number;
  /** Each way the budget does not fit, in words with its numbers. */
  problems: string[];
}

/**
 * Judges a role's pools against MySQL's max_connections. Two ways not to fit: the role alone, at full
 * pools, leaves no room for a worker (the incident: idle gateways held all 151 connections and the
 * workers, the only processes that turn 202s into orders, got none); or what is open now (other roles,
 * operators) leaves too little for this role's pools. `inUse` may include connections of this role's
 * own processes opened since they started, so the second judgement errs towards a warning.
 */
export function judgeConnectionBudget(budget: ConnectionBudget, server: ServerConnections): BudgetVerdict {
  const demand = budget.processes * budget.pool;
  const problems: string[] = [];
  const who = `${budget.processes} ${budget.role} process${budget.processes === 1 ? '' : 'es'} x pool ${budget.pool} = ${demand}`;
  if (demand + budget.workerHeadroom > server.maxConnections) {
    problems.push(
      budget.workerHeadroom > 0
        ? `${who} connections, plus ${budget.workerHeadroom} for a worker, exceed max_connections ${server.maxConnections}`
        : `${who} connections exceed max_connections ${server.maxConnections}`,
    );
  }
  const free = Math.max(0, server.maxConnections - server.inUse);
  if (demand > free) {
    problems.push(`${who} connections, but only ${free} of max_connections ${server.maxConnections} are free (${server.inUse} in use)`);
  }
  return { fits: problems.length === 0, demand, problems };
}

/**
 * The budget of a role under `config`: its pool size (a gateway's two: the buyers' and the dashboard's),
 * and room for a worker unless it is one.
 */
export function connectionBudgetOf(config: Config, role: ProcessRole, processes = 1): ConnectionBudget {
  const pool = {
    gateway: config.GATEWAY_DB_POOL_SIZE + config.DASHBOARD_DB_POOL_SIZE,
    worker: config.WORKER_DB_POOL_SIZE,
    reconciler: config.RECONCILER_DB_POOL_SIZE,
  }[role];
  return { role, pool, processes, workerHeadroom: role === 'worker' ? 0 : config.WORKER_DB_POOL_SIZE };
}

const READ_TIMEOUT_MS = 2000;

/** max_connections and Threads_connected, over a connection of its own (not a pool's: it may be full). */
export async function readServerConnections(databaseUrl: string): Promise<ServerConnections> {
  const { database: _database, ...server } = poolConfigFromUrl(databaseUrl);
  const connection = await createConnection(server);
  const timer = setTimeout(() => connection.destroy(), READ_TIMEOUT_MS);
  try {
    const [limit] = await connection.query<{ maxConnections: number | bigint }[]>('SELECT @@GLOBAL.max_connections AS maxConnections');
    // SHOW STATUS needs no privilege, unlike the process list, which shows only the user's own threads.
    const [threads] = await connection.query<{ Value: string }[]>("SHOW GLOBAL STATUS LIKE 'Threads_connected'");
    return { maxConnections: Number(limit?.maxConnections), inUse: Number(threads?.Value) - 1 };
  } finally {
    clearTimeout(timer);
    await connection.end().catch(() => connection.destroy());
  }
}

/**
 * Reads the server's limit once MySQL answers (retrying in the background while it does not: a MySQL
 * down at start must not stop a process from starting) and logs the verdict: at error level, with every
 * number, when the role's pools cannot fit; at debug level when they do, the check finishing at any
 * moment of the start (or of a quick stop). Never rejects; call it without awaiting.
 */
export async function checkConnectionBudget(
  config: Config,
  role: ProcessRole,
  logger: Logger,
  options: { processes?: number; retryMs?: number } = {},
): Promise<BudgetVerdict> {
  const budget = connectionBudgetOf(config, role, options.processes);
  let waitMs = options.retryMs ?? 1000;
  for (let attempt = 1; ; attempt += 1) {
    try {
      const server = await readServerConnections(config.DATABASE_URL);
      const verdict = judgeConnectionBudget(budget, server);
      const numbers = { ...budget, demand: verdict.demand, maxConnections: server.maxConnections, connectionsInUse: server.inUse };
      if (verdict.fits) logger.debug(numbers, 'MySQL connection budget: the pools fit under max_connections');
      else {
        logger.error(
          { ...numbers, problems: verdict.problems },
          'MySQL connection budget exceeded: these pools can take the connections the workers need to write orders; lower the pools or the processes, or raise max_connections (README, MySQL connection budget)',
        );
      }
      return verdict;
    } catch (err) {
      if (attempt === 1)
        logger.warn({ err, role }, 'MySQL connection budget not checked yet: MySQL did not answer; checking again in the background');
      await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
      waitMs = Math.min(waitMs * 2, 30_000);
    }
  }
}
