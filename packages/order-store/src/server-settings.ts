import type { Logger } from '@flashsale/runtime';
import type { PrismaClient } from './prisma-client.ts';

/**
 * Server settings the order writer relies on, checked once and logged (not changed: they are the
 * server's). Strict mode, the default of MySQL 5.7+ and MariaDB 10.2.4+: a value too long for its column
 * is refused rather than truncated with a warning (setting it per connection with the driver's initSql
 * made a connection attempt during an outage crash the process). innodb_autoinc_lock_mode 2, MySQL 8's
 * default: under 1 (MariaDB's) the writer's INSERT ... SELECT holds a table-level lock on orders for the
 * whole statement, so different sales' batches insert one at a time. Rejects when MySQL does not answer.
 */
export async function checkServerSettings(prisma: PrismaClient, logger: Logger): Promise<void> {
  const [row] = await prisma.$queryRaw<
    { mode: string; autoinc: number | bigint }[]
  >`SELECT @@SESSION.sql_mode AS mode, @@innodb_autoinc_lock_mode AS autoinc`;
  if (!/STRICT_(TRANS|ALL)_TABLES/.test(row?.mode ?? '')) {
    logger.error(
      { sqlMode: row?.mode },
      'MySQL is not in strict mode: a value too long for its column would be truncated, not refused; add STRICT_TRANS_TABLES to sql_mode',
    );
  }
  if (row && Number(row.autoinc) !== 2) {
    logger.info(
      { innodbAutoincLockMode: Number(row.autoinc) },
      'innodb_autoinc_lock_mode is not 2: order batches of different sales insert one at a time (2 recommended)',
    );
  }
}
