import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaClient } from './generated/prisma/client.ts';
import { poolConfigFromUrl } from './database-url.ts';

export { PrismaClient };

export interface PrismaOptions {
  /**
   * Longest a statement may run on the server, in ms, default none. Applied on MariaDB through the
   * session's `max_statement_time` (lock waits included: a `LOCK TABLES` elsewhere cannot hold a request
   * for a minute); MySQL ignores the MariaDB-only comment that sets it, and the caller's own deadline
   * (the gateway's answer deadline) is what bounds a request there.
   */
  statementTimeoutMs?: number;
  /**
   * How long a connection may sit unused in the pool before it is closed, in ms: DB_POOL_IDLE_TIMEOUT_MS,
   * which every process passes. Unset (a script's or a test's short-lived pool), the driver keeps an
   * opened connection for its own default, 30 minutes, until the pool is closed.
   */
  idleTimeoutMs?: number;
  /**
   * How long a query waits for a connection of the pool before it fails ("pool timeout"), in ms,
   * default 2000: a request stuck behind a full pool is answered 503 rather than held.
   */
  acquireTimeoutMs?: number;
}

/**
 * A Prisma client over the MariaDB driver adapter: no query engine binary, one pool per process;
 * `preparedStatementCache` statements kept prepared per connection (see poolConfigFromUrl).
 *
 * The pool opens its connections as queries need them, up to `poolSize`, and closes those unused for
 * `idleTimeoutMs`, keeping one. The driver's default opens all `poolSize` at once and keeps them for
 * good: sixteen idle gateways then held every connection MySQL allowed and the workers could write no
 * order. `minimumIdle` is 1, not 0, because the driver Prisma's adapter ships (mariadb 3.4) only opens
 * a connection to keep `minimumIdle` idle ones: with 0 it never opens any, and every query ends in
 * "pool timeout". So a process holds one connection from its first query on, plus one spare while
 * queries run, up to `poolSize`.
 */
export function createPrisma(databaseUrl: string, poolSize = 10, preparedStatementCache = 0, options: PrismaOptions = {}): PrismaClient {
  const pool = {
    ...poolConfigFromUrl(databaseUrl, poolSize, preparedStatementCache),
    ...(options.acquireTimeoutMs === undefined ? {} : { acquireTimeout: options.acquireTimeoutMs }),
  };
  // `/*M!100108 ... */` runs on MariaDB 10.1.8 and later only, so one setting serves both servers.
  const initSql =
    options.statementTimeoutMs === undefined
      ? undefined
      : `/*M!100108 SET SESSION max_statement_time=${options.statementTimeoutMs / 1000} */`;
  // The driver reads idleTimeout in seconds, fractions included.
  const lifetime = { minimumIdle: 1, ...(options.idleTimeoutMs === undefined ? {} : { idleTimeout: options.idleTimeoutMs / 1000 }) };
  return new PrismaClient({ adapter: new PrismaMariaDb({ ...pool, ...lifetime, ...(initSql ? { initSql } : {}) }) });
}
