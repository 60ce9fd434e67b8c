import type { PrismaClient } from './generated/prisma/client.ts';

/**
 * Which MySQL the pool reaches, as one string kept in Redis (mysql-server-record.ts):
 * - one server: its `server_id`, and `server_uuid` where the server has one (MySQL; MariaDB has none). A
 *   replica promoted in its primary's place is another server: replication requires distinct ids. A dump
 *   restored into the same server keeps it: there the audit's drift is the evidence.
 * - a Galera cluster (`wsrep_cluster_state_uuid` set): the cluster's state UUID and its last committed
 *   seqno, not the node's ids. Every node of one cluster holds one history under one state UUID, so
 *   HAProxy moving the writer between nodes is the same MySQL; a cluster bootstrapped again from a node
 *   that left early keeps the UUID but its seqno goes back, and that is a server gone back.
 *
 * The status is read with `wsrep_sync_wait` for that one statement: a node that just became the writer may
 * not have applied the last write-sets it holds, and its seqno would look behind the one last seen. Bit 8,
 * SHOW's: with bit 1 (reads) MariaDB 10.11 answers SHOW at once, the unapplied seqno with it
 * (test/galera/galera-reads.test.ts).
 */
export async function mysqlServerIdentity(prisma: PrismaClient): Promise<string> {
  const rows = await prisma.$queryRawUnsafe<{ Variable_name: string; Value: string }[]>(
    `/*M!100300 SET STATEMENT wsrep_sync_wait = 8 FOR */ SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_state_uuid', 'wsrep_last_committed')`,
  );
  const status = new Map(rows.map((row) => [row.Variable_name, row.Value]));
  const cluster = status.get('wsrep_cluster_state_uuid');
  if (cluster) return `wsrep_cluster_state_uuid=${cluster},wsrep_last_committed=${status.get('wsrep_last_committed') ?? '0'}`;
  const variables = await prisma.$queryRaw<{ Variable_name: string; Value: string }[]>`
    SHOW GLOBAL VARIABLES WHERE Variable_name IN ('server_id', 'server_uuid')`;
  return variables
    .map((row) => `${row.Variable_name}=${row.Value}`)
    .sort()
    .join(',');
}

/**
 * What the MySQL reached now is, against the identity last seen: `same` (one server, or one Galera cluster
 * that has gone on from where it was: any node of it), or `changed` (another server, another cluster, or
 * this cluster with fewer commits than were seen: bootstrapped again from a node that was behind).
 */
export function judgeMysqlServer(seen: string, now: string): 'same' | 'changed' {
  if (seen === now) return 'same';
  const [before, after] = [galeraPosition(seen), galeraPosition(now)];
  if (!before || !after) return 'changed';
  return before.cluster === after.cluster && after.seqno >= before.seqno ? 'same' : 'changed';
}

function galeraPosition(identity: string): { cluster: string; seqno: bigint } | null {
  const found = /^wsrep_cluster_state_uuid=([^,]+),wsrep_last_committed=(-?\d+)$/.exec(identity);
  return found ? { cluster: found[1]!, seqno: BigInt(found[2]!) } : null;
}
