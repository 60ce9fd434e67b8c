import type { Checkpoint, LossJudgement, RecordedState } from '@flashsale/order-store';
import { acceptedUnits, type SaleRedis, type SaleSnapshot } from '@flashsale/redis-store';
import type { ReconcileReason } from '@flashsale/jobs';

/** A loss, and whether it is of a state that vanished or went back ('lost') or of another generation ('stale'). */
export type Loss = { lost: false } | { lost: true; reason: Extract<ReconcileReason, 'lost' | 'stale'>; why: string };

/**
 * Judges a sale's Redis state against MySQL's record (pure). Within one generation, buyers and accepted
 * units only grow, and the checkpoint's stream entry is only trimmed after a newer checkpoint was
 * verified (units and reservations given back by closed orders are counted as accepted still: see
 * SaleSnapshot); fewer buyers or units than at the checkpoint, or its entry gone, means Redis went back in
 * time (a restart from an old snapshot, a failover to a lagging replica) and lost reservations.
 * Whether the sale is paused plays no part: a reconciliation pauses it, and must judge it all the same.
 * Nor can the counts see everything: a state that lost only writes made after the checkpoint, then took
 * as many new ones, counts as far; the replication id of the server that holds it (recorded with the
 * checkpoint) says whether it is still the history the checkpoint saw.
 */
export function judgeLoss(recorded: RecordedState, snapshot: SaleSnapshot, checkpointEntryPresent = true): Loss {
  if (!snapshot.present) return { lost: true, reason: 'lost', why: 'the sale is not in Redis' };
  if (snapshot.generation !== recorded.generation) {
    return { lost: true, reason: 'stale', why: `Redis holds generation ${snapshot.generation || '(none)'}, MySQL ${recorded.generation}` };
  }
  const { checkpoint } = recorded;
  if (!checkpoint) return { lost: false };
  if (!checkpointEntryPresent) {
    return {
      lost: true,
      reason: 'lost',
      why: `Redis went back: the stream no longer holds entry ${checkpoint.streamId ?? ''} it held at the checkpoint`,
    };
  }
  const accepted = acceptedUnits(snapshot);
  if (snapshot.buyers < checkpoint.reservations || accepted < checkpoint.units) {
    return {
      lost: true,
      reason: 'lost',
      why: `Redis went back: ${snapshot.buyers} buyers and ${accepted} units accepted, the checkpoint saw ${checkpoint.reservations} and ${checkpoint.units}`,
    };
  }
  // The counts hold, but the state now belongs to another history of writes: a replica promoted (which
  // may lack the old master's last writes, after the checkpoint, and have sold past them since) or a
  // restart (appendfsync everysec loses up to a second). What it lacks may be orders in MySQL whose
  // units it would sell again: only a rebuild from MySQL is sure, so one is asked for.
  if (checkpoint.replicationId && snapshot.replicationId && checkpoint.replicationId !== snapshot.replicationId) {
    return {
      lost: true,
      reason: 'lost',
      why: `Redis's history of writes changed since the checkpoint (replication id ${checkpoint.replicationId}, now ${snapshot.replicationId}): a failover or a restart`,
    };
  }
  return { lost: false };
}

/** Whether the stream still holds the checkpoint's last entry (true when there is nothing to check). */
export async function holdsCheckpointEntry(
  inRedis: Pick<SaleRedis, 'hasEntry'>,
  checkpoint: Checkpoint | null,
  snapshot: SaleSnapshot,
): Promise<boolean> {
  const streamId = checkpoint?.streamId;
  return !streamId || !snapshot.present || (await inRedis.hasEntry(streamId));
}

/**
 * Judges the sale's Redis state (`snapshot`, read now) against `recorded`: what a rebuild calls with the
 * sale row locked, before it replaces the checkpoint. Stale counts as a loss here too: the state about to
 * be replaced is not the one the checkpoint describes, so the checkpoint's reservations are measured
 * against MySQL's orders.
 */
export async function observeLoss(inRedis: SaleRedis, recorded: RecordedState, snapshot: SaleSnapshot): Promise<LossJudgement> {
  const loss = judgeLoss(recorded, snapshot, await holdsCheckpointEntry(inRedis, recorded.checkpoint, snapshot));
  return loss.lost ? { lost: true, why: loss.why } : { lost: false };
}
