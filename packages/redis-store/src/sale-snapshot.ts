import type { SaleRef } from './store-ref.ts';
import { redisTimeMs, SALE_COUNTER_FIELDS, saleCountersOf } from './sale-meta.ts';
import { lastEntryIdOf } from './reservation-stream.ts';
import { orderWritersGroupOf, undeliveredLag } from './stream-backlog.ts';
import { memoryLimitOf, type MemoryLimit } from './redis-memory.ts';

/** What Redis holds for a sale at one instant (one read-only script), on Redis's clock. */
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
  /** The server's memory against its limit: over it, Redis refuses writes (retention then keeps no entry for its age). */
  memory: MemoryLimit;
}

/**
 * Reads a sale's counters atomically (snapshot-sale-3.lua, a read-only script rather than a MULTI: Redis
 * refuses a MULTI over its memory limit, and runs this): the reconciler's checkpoints and detection use it.
 */
export async function snapshotSale({ redis, keys }: SaleRef): Promise<SaleSnapshot> {
  const [time, fields, buyers, last, length, groups, replication, memory] = await redis.snapshotSale(
    keys.meta,
    keys.buyers,
    keys.stream,
    ...SALE_COUNTER_FIELDS,
  );
  const counters = saleCountersOf(fields);
  // XINFO GROUPS is O(1) in Redis 7 (entries added minus entries read): the look that exports the
  // backlog per sale costs the same whatever the stream holds. Null: no stream yet.
  const group = groups ? orderWritersGroupOf(groups) : undefined;
  const lastEntryId = lastEntryIdOf(last);
  return {
    at: redisTimeMs(time),
    present: counters !== null,
    stock: counters?.stock ?? 0,
    remaining: counters?.remaining ?? 0,
    generation: counters?.generation ?? '',
    paused: counters?.paused ?? false,
    controlsVersion: counters?.controlsVersion ?? 0,
    operatorPaused: counters?.operatorPaused ?? false,
    buyers: Number(buyers) + (counters?.returnedReservations ?? 0),
    returnedUnits: counters?.returnedUnits ?? 0,
    lastEntryId,
    streamLength: Number(length),
    backlog: group ? { lag: undeliveredLag(group, lastEntryId), pending: group.pending } : null,
    memory: memoryLimitOf(memory),
    ...replicationIdOf(replication),
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
