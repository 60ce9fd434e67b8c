import type { Checkpoint } from '@flashsale/order-store';
import { acceptedUnits, type SaleSnapshot } from '@flashsale/redis-store';

/**
 * A checkpoint of what `snapshot` shows the state has accepted, in the history of writes `history`: the
 * snapshot's own server's by default. A writer that read the history before its own writes passes that
 * one instead: should the server have changed in between (a failover), the first look then sees another
 * history than the checkpoint's and asks for a rebuild, rather than take the new server's state, which
 * may lack those writes, as the floor.
 */
export function checkpointOf(snapshot: SaleSnapshot, history = snapshot.replicationId): Checkpoint {
  return {
    reservations: snapshot.buyers,
    units: acceptedUnits(snapshot),
    at: snapshot.at,
    streamId: snapshot.lastEntryId,
    replicationId: history ?? null,
  };
}

/**
 * The checkpoint a sale is published with: nothing accepted, in the history of the server it is about to
 * be published on (`before`, a snapshot of the sale's slot read before the publish). Without it, a sale
 * the watch had not looked at yet when its server failed over had nothing to be judged against: the first
 * look took the promoted replica's state, short of the reservations it never received, as the checkpoint,
 * and their units were sold again.
 */
export function publishCheckpoint(before: SaleSnapshot): Checkpoint {
  return { reservations: 0, units: 0, at: before.at, streamId: null, replicationId: before.replicationId ?? null };
}
