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
export function poolConfigFromUrl(databaseUrl: string, connectionLimit = 10): DatabasePoolConfig {
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
    // Prisma's adapter turns the driver's prepared statement cache off unless told otherwise, so every
    // statement was prepared, executed and closed: three exchanges with MySQL and a parse each time. The
    // worker's statements are the same text on every batch. 100 per connection is what Prisma's former
    // query engine kept; with the default pool of 10 that is 1,000 per process, far below MySQL's
    // max_prepared_stmt_count (16,382 by default).
    prepareCacheLength: 100,
  };
}
