/** What both the `mariadb` driver and Prisma's MariaDB adapter accept as a pool configuration. */
export interface DatabasePoolConfig {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  connectionLimit: number;
  acquireTimeout: number;
  connectTimeout: number;
  prepareCacheLength: number;
}

/** Connection settings of the `mariadb` driver from a `mysql://user:pass@host:port/db` URL. */
export function poolConfigFromUrl(databaseUrl: string, connectionLimit = 10, preparedStatementCache = 0): DatabasePoolConfig {
  const url = new URL(databaseUrl);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_$]{1,64}$/.test(database)) {
    throw new Error(`DATABASE_URL must name a database of letters, digits, _ or $ (got "${database}")`);
  }
  return {
    host: url.hostname || '127.0.0.1',
    port: url.port ? Number(url.port) : 3306,
    user: decodeURIComponent(url.username || 'root'),
    password: decodeURIComponent(url.password),
    database,
    connectionLimit,
    // Fail a request quickly when MySQL is away instead of queueing it for the default 10 s; the
    // worker retries with its own backoff.
    acquireTimeout: 2000,
    connectTimeout: 2000,
    // Prepared statements kept per connection. 0 (what Prisma's adapter defaults to) prepares, executes
    // and closes every statement: three exchanges and a parse each time. The order worker keeps a few,
    // its quick pass being the same two statements on every batch; elsewhere it stays 0, because
    // MySQL's max_prepared_stmt_count (16,382) is shared by every connection of every process.
    prepareCacheLength: preparedStatementCache,
  };
}
