import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';
import { redisTimeMs, SALE_COUNTER_FIELDS, saleCountersOf } from './sale-meta.ts';
import { lastEntryIdOf } from './reservation-stream.ts';
import { orderWritersGroupOf, undeliveredLag } from './stream-backlog.ts';

/** What Redis holds for a sale at one instant (one MULTI), on Redis's clock. */
export interface SaleSnapshot {
  /** Redis time of the snapshot, epoch ms. */
  at: number;
  /** False when the sale's meta hash is gone (Redis lost it, or it was never published). */
  present: boolean;
  stock: number;
  remaining: number;
  generation: string;
  /** The reconciler's pause. */
  paused: boolean;
  /** Version of the operator's controls the state holds (0 for none, or a state that is gone). */
  controlsVersion: number;
  /** The operator's pause; `paused` is the reconciler's own (a reconciliation under way, or one that died). */
  operatorPaused: boolean;
  /**
   * Reservations this state holds or held: the buyers recorded (those accepted by this state, plus
   * those a rebuild restored) and the buyer records a return of a closed order removed since. Only grows
   * within a generation.
   */
  buyers: number;
  /**
   * Units closed orders gave back to this state. Units accepted by it, stock - remaining + this, only
   * grow within a generation (acceptedUnits).
   */
  returnedUnits: number;
  /** Id of the stream's last entry, null for an empty or missing stream. */
  lastEntryId: string | null;
  /** Entries the stream holds (XLEN): at most one means there is nothing to trim. */
  streamLength: number;
  /**
   * The order writers' group: pending as XINFO GROUPS tells it, lag judged from the ids (undeliveredLag:
   * 0 when nothing follows the group's position, whatever XINFO's lag says; null when entries follow and
   * XINFO cannot count them, never counted here by reading the stream); null when the stream or its
   * group is missing.
   */
  backlog: { lag: number | null; pending: number } | null;
  /**
   * The replication id (master_replid) of the server that answered: the history of writes the state
   * belongs to. A promoted replica starts a new one, and so does a restarted server; absent when the
   * server does not report it.
   */
  replicationId?: string;
}

/** Where XINFO GROUPS sits in the snapshot's MULTI: the one command allowed to fail (no stream yet). */
const GROUPS_REPLY = 5;

/** Reads a sale's counters atomically (MULTI): the reconciler's checkpoints and detection use it. */
export async function snapshotSale(redis: ScriptedRedis, prefix: string, saleId: number): Promise<SaleSnapshot> {
  const keys = saleKeys(prefix, saleId);
  const replies = await redis
    .multi()
    .time()
    .hmget(keys.meta, ...SALE_COUNTER_FIELDS)
    .hlen(keys.buyers)
    .xrevrange(keys.stream, '+', '-', 'COUNT', 1)
    .xlen(keys.stream)
    // O(1) in Redis 7 (entries added minus entries read): the look that exports the backlog per sale
    // costs the same whatever the stream holds.
    .xinfo('GROUPS', keys.stream)
    // Keyless, so it runs on the server of the sale's slot, in the same transaction: the id of the
    // history the counters above belong to.
    .info('replication')
    .exec();
  if (!replies) throw new Error('snapshot transaction was discarded');
  for (const [index, [error]] of replies.entries()) if (error && index !== GROUPS_REPLY) throw error;
  const counters = saleCountersOf(replies[1]![1]);
  const [groupsError, groups] = replies[GROUPS_REPLY]!;
  const group = groupsError ? undefined : orderWritersGroupOf(groups);
  const lastEntryId = lastEntryIdOf(replies[3]![1]);
  return {
    at: redisTimeMs(replies[0]![1]),
    present: counters !== null,
    stock: counters?.stock ?? 0,
    remaining: counters?.remaining ?? 0,
    generation: counters?.generation ?? '',
    paused: counters?.paused ?? false,
    controlsVersion: counters?.controlsVersion ?? 0,
    operatorPaused: counters?.operatorPaused ?? false,
    buyers: Number(replies[2]![1]) + (counters?.returnedReservations ?? 0),
    returnedUnits: counters?.returnedUnits ?? 0,
    lastEntryId,
    streamLength: Number(replies[4]![1]),
    backlog: group ? { lag: undeliveredLag(group, lastEntryId), pending: group.pending } : null,
    ...replicationIdOf(replies[6]![1]),
  };
}

/** master_replid from an INFO replication reply, as a spreadable field (none when not reported). */
function replicationIdOf(info: unknown): { replicationId?: string } {
  const id = /^master_replid:([0-9a-f]+)\s*$/m.exec(String(info))?.[1];
  return id ? { replicationId: id } : {};
}

/** Units a sale's Redis state has accepted: what it took and still holds, and what closed orders gave back. */
export function acceptedUnits(snapshot: Pick<SaleSnapshot, 'stock' | 'remaining' | 'returnedUnits'>): number {
  return snapshot.stock - snapshot.remaining + snapshot.returnedUnits;
}
