import type { Prisma } from './generated/prisma/client.ts';

/**
 * Makes the transaction `tx` read everything the cluster committed before now: on a Galera node, waits
 * until the node has applied every write-set committed anywhere before this point (`wsrep_sync_wait`), and
 * must come first in the transaction, before its snapshot is taken.
 *
 * Why: with one writer every connection reaches the same node and reads its own commits; but right after
 * HAProxy moved the writer, the new node may hold write-sets the old one committed (and a worker
 * acknowledged) that it has not applied yet. A count read then is short, and a rebuild from it would put
 * those units on sale a second time.
 *
 * How: MariaDB runs no causal wait for a statement inside an open transaction, and Prisma has sent BEGIN
 * before the first statement of `tx`: a `SET STATEMENT wsrep_sync_wait = 1 FOR SELECT` there returns at
 * once, whatever the node lacks. So the empty transaction is ended and begun again by the statement that
 * waits (`START TRANSACTION` is a read of wsrep_sync_wait's bit 1), at REPEATABLE READ, what both callers
 * read at. Elsewhere it costs two trivial statements: MariaDB without Galera does not wait, MySQL reads the
 * versioned comment as a comment. Test: test/galera/galera-reads.test.ts (node 2's applier held).
 */
export async function readingClusterCommits(tx: Prisma.TransactionClient): Promise<void> {
  await tx.$executeRawUnsafe('COMMIT');
  await tx.$executeRawUnsafe('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
  await tx.$executeRawUnsafe('/*M!100300 SET STATEMENT wsrep_sync_wait = 1 FOR */ START TRANSACTION');
}
