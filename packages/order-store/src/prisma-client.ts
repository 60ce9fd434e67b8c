import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaClient } from './generated/prisma/client.ts';
import { poolConfigFromUrl } from './database-url.ts';

export { PrismaClient };

/**
 * A Prisma client over the MariaDB driver adapter: no query engine binary, one pool per process;
 * `preparedStatementCache` statements kept prepared per connection (see poolConfigFromUrl).
 */
export function createPrisma(databaseUrl: string, poolSize = 10, preparedStatementCache = 0): PrismaClient {
  return new PrismaClient({ adapter: new PrismaMariaDb(poolConfigFromUrl(databaseUrl, poolSize, preparedStatementCache)) });
}
