import type { PrismaClient } from './generated/prisma/client.ts';

/**
 * Codes that mean MySQL could not serve a statement now, whatever the statement: the driver's own
 * (connection closed, socket timeout, pool timeout) and the server's (too many connections, lock wait
 * timeout, deadlock, statement time limit, server gone away or shutting down).
 */
const UNAVAILABLE_CODES = new Set([
  // mariadb driver: connection closed, destroyed, socket closed or errored, connect timeout, socket
  // timeout, pool closed, pool timeout, closing pool, pool without connection.
  45001, 45004, 45009, 45012, 45013, 45019, 45026, 45027, 45028, 45037, 45061,
  // server: too many connections, lock wait timeout, deadlock, shutdown in progress, query interrupted,
  // max_statement_time (MariaDB), MAX_EXECUTION_TIME (MySQL), client-library connection errors; a
  // Galera node outside the primary component ("WSREP has not yet prepared node for application use").
  1040, 1205, 1213, 1053, 1317, 1969, 3024, 2002, 2003, 2006, 2013, 1047,
]);

// Prisma's own codes for the same: database unreachable, timed out, connection closed, pool and
// transaction timeouts.
const PRISMA_UNAVAILABLE = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);

/**
 * Whether a failed statement means MySQL is away, overloaded or locked (a 503 to a client, a retry to a
 * background loop), as opposed to a refusal of the statement's data or a bug, which retrying won't fix.
 */
export function isMysqlUnavailable(error: unknown): boolean {
  const e = error as {
    name?: string;
    code?: unknown;
    errno?: unknown;
    meta?: { driverAdapterError?: { cause?: { code?: unknown; originalCode?: unknown } } };
  } | null;
  if (!e || typeof e !== 'object') return false;
  if (e.name === 'PrismaClientInitializationError') return true;
  if (typeof e.code === 'string' && PRISMA_UNAVAILABLE.has(e.code)) return true;
  return mysqlCodesOf(e).some((code) => UNAVAILABLE_CODES.has(code));
}

/** The MySQL error numbers a failure carries: the driver's own, or under Prisma's adapter, its cause's. */
function mysqlCodesOf(e: {
  errno?: unknown;
  meta?: { driverAdapterError?: { cause?: { code?: unknown; originalCode?: unknown } } };
}): number[] {
  const cause = e.meta?.driverAdapterError?.cause;
  return [cause?.code, cause?.originalCode, e.errno].map(Number);
}

/**
 * Whether MySQL chose this transaction as a deadlock's victim (1213): it was rolled back whole, and
 * running it again is the server's own advice ("try restarting transaction").
 */
export function isDeadlock(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  return mysqlCodesOf(error).includes(DEADLOCK);
}

const DEADLOCK = 1213;

/** Whether MySQL answers a statement now (`SELECT 1`): what a log line says while writes keep failing. */
export async function mysqlAnswers(prisma: PrismaClient): Promise<boolean> {
  try {
    await prisma.$queryRaw`SELECT 1`;
    return true;
  } catch {
    return false;
  }
}
