import type { Prisma } from './generated/prisma/client.ts';

/**
 * Makes the transaction `tx` read everything the cluster committed before now: on a Galera node, waits
 * until the node has applied every write-set committed anywhere before this statement (`wsrep_sync_wait`,
 * for this one statement), and must come first in the transaction, before its snapshot is taken.
 *
 * Why: with one writer every connection reaches the same node and reads its own commits; but right after
 * HAProxy moved the writer, the new node may hold write-sets the old one committed (and a worker
 * acknowledged) that it has not applied yet. A count read then is short, and a rebuild from it would put
 * those units on sale a second time. Elsewhere it costs one trivial statement: MariaDB without Galera runs
 * it as `SELECT 1`, MySQL reads the versioned comment as a comment.
 */
export async function readingClusterCommits(tx: Prisma.TransactionClient): Promise<void> {
  await tx.$queryRawUnsafe('/*M!100300 SET STATEMENT wsrep_sync_wait = 1 FOR */ SELECT 1');
}
