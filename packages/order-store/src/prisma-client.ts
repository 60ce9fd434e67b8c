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
}

/**
 * A Prisma client over the MariaDB driver adapter: no query engine binary, one pool per process;
 * `preparedStatementCache` statements kept prepared per connection (see poolConfigFromUrl).
 */
export function createPrisma(databaseUrl: string, poolSize = 10, preparedStatementCache = 0, options: PrismaOptions = {}): PrismaClient {
  const pool = poolConfigFromUrl(databaseUrl, poolSize, preparedStatementCache);
  // `/*M!100108 ... */` runs on MariaDB 10.1.8 and later only, so one setting serves both servers.
  const initSql = options.statementTimeoutMs === undefined ? undefined : `/*M!100108 SET SESSION max_statement_time=${options.statementTimeoutMs / 1000} */`;
  return new PrismaClient({ adapter: new PrismaMariaDb({ ...pool, ...(initSql ? { initSql } : {}) }) });
}
