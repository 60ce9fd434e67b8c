import type { PrismaClient } from './generated/prisma/client.ts';

/**
 * Which MySQL server the pool reaches: its `server_id`, and `server_uuid` where the server has one
 * (MySQL; MariaDB has none), as one string. A replica promoted in its primary's place is another server:
 * replication requires distinct ids. A dump restored into the same server keeps it: there the audit's
 * drift is the evidence.
 */
export async function mysqlServerIdentity(prisma: PrismaClient): Promise<string> {
  const rows = await prisma.$queryRaw<{ Variable_name: string; Value: string }[]>`
    SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_id', 'server_uuid')`;
  return rows
    .map((row) => `${row.Variable_name}=${row.Value}`)
    .sort()
    .join(',');
}
