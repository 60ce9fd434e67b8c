import { SaleNotFound } from '@flashsale/domain';
import type { ReconcileReason, ReconcileResult } from '@flashsale/jobs';
import { controlStateOf, withSaleLock } from '@flashsale/order-store';
import type { SaleRedis, SaleSnapshot } from '@flashsale/redis-store';
import { restoreBuyerHistory } from './buyer-history.ts';
import { observeLoss } from './loss-judgement.ts';
import { recloseOrdersFromRedis } from './reclose-orders.ts';
import { restoreOrdersFromRedis } from './restore-orders.ts';
import type { SalesDeps } from './sales-deps.ts';
import { checkpointOf } from './state-checkpoint.ts';

export interface ReconcileDeps extends SalesDeps {
  /** For the named lock that keeps two runs of one sale's reconciliation apart. */
  databaseUrl: string;
  drainTimeoutMs: number;
  /** Tells gateways that a sale's state changed, so none keeps answering from a stale verdict. */
  announce(saleId: number): Promise<void>;
}

/**
 * Restores a sale's Redis state from MySQL without overselling. The order is the whole point, and the
 * crash points with it:
 *   1. pause intake, so nothing new is accepted while MySQL catches up;
 *   2. wait until the stream has drained, because until then MySQL does not know every sale, and
 *      remaining = stock - units would hand out the in-flight units a second time; then write again the
 *      orders MySQL lost that Redis still holds (restoreOrdersFromRedis), for the same reason;
 *   3. check the pause still holds where it was written (pauseHeld), judge the state against the last
 *      checkpoint and count what it lost, then switch to a new
 *      generation under the sale row lock (entries of the old state still in a worker's hands, possible
 *      only if Redis lost the stream, are then refused) and rebuild from MySQL: the buyers streamed page
 *      by page into a hash aside, then switched in with the meta in one O(1) script (sale-rebuild.ts);
 *   4. record the rebuilt state's checkpoint, then resume.
 * Safe to run again at any step: a retry pauses, drains and rebuilds anew. A run that dies anywhere
 * before 4 leaves the sale paused (nothing sells, so nothing is oversold) until the queue's retry; the
 * orders restored in 2 are idempotent by reservation id, and the losses are counted and named only in the
 * transaction of the switch in 3, so a retry neither writes nor counts anything twice.
 */
export async function reconcileSale(deps: ReconcileDeps, saleId: number, reason: ReconcileReason): Promise<ReconcileResult> {
  // One job id per sale keeps BullMQ from queueing two, but a job whose lock lapsed is run again while
  // the first run may go on: two rebuilds interleaved would refuse each other's reservations.
  return withSaleLock(deps.databaseUrl, 'reconcile', saleId, () => reconcileLocked(deps, saleId, reason));
}

async function reconcileLocked(deps: ReconcileDeps, saleId: number, reason: ReconcileReason): Promise<ReconcileResult> {
  const { mysql, logger } = deps;
  const inRedis = deps.redis.sale(saleId);
  const started = performance.now();
  logger.info({ saleId, reason }, 'reconcile: pausing intake');
  await inRedis.setPaused(true);
  // The history of writes the pause went to: the rebuild switches nothing unless its server still holds
  // the pause in that history (pauseHeld), and records its checkpoint only in it (recordRebuiltCheckpoint).
  const pausedIn = (await inRedis.snapshot()).replicationId;
  await deps.announce(saleId);

  const backlog = await inRedis.waitForDrain(deps.drainTimeoutMs);
  logger.info(
    { saleId, deadLettered: backlog.deadLettered, waitedMs: Math.round(performance.now() - started) },
    'reconcile: stream drained',
  );

  // Drained, every reservation Redis holds is an order or a dead letter, unless MySQL went back in time:
  // those are written again from Redis's records before the rebuild counts MySQL, so the rebuild puts no
  // unit of a reservation answered 202 back on sale. What MySQL refuses is lost: counted with the rest.
  // First the closes MySQL lost (orders live there that Redis gave back): the stock they freed is what
  // the buyers since hold, and the restore would refuse them without it.
  const reclosed = await recloseOrdersFromRedis(inRedis, mysql);
  if (reclosed.length > 0)
    logger.error(
      { saleId, reclosed },
      'reconcile: MySQL had reopened orders Redis had given back (it lost their cancel or expiry); closed again',
    );
  const restore = await restoreOrdersFromRedis(inRedis, mysql);
  const restored = { reservations: restore.restored.length, units: restore.restored.reduce((sum, r) => sum + r.quantity, 0) };
  if (restored.reservations > 0)
    logger.error(
      { saleId, ...restored },
      'reconcile: MySQL had lost orders Redis still held (it went back in time); written again with their reservation ids',
    );
  const unrestorable = { reservations: restore.refused.length, units: restore.refused.reduce((sum, r) => sum + r.quantity, 0) };
  if (unrestorable.reservations > 0)
    logger.error(
      { saleId, refused: restore.refused },
      'reconcile: reservations Redis held could not be written again as orders; counted as lost',
    );
  // Named with their count, in the rebuild's transaction, before the rebuild replaces Redis's records
  // (the only other place they are known): a buyer's lookup, cancel and payment answer `lost` from them.
  // A run that fails before that commit names and counts nothing; its retry finds them again in Redis.
  const named = restore.refused.map(({ reservationId, userId, quantity, reservedAt, reason }) => ({
    reservationId,
    saleId,
    userId,
    quantity,
    reason,
    reservedAt: reservedAt ?? null,
  }));

  // Whatever the reason given (an operator's request can beat the watcher to a loss), the state about to
  // be replaced is judged against the checkpoint first, with the sale row locked, and what it lost is
  // counted in the transaction that replaces the checkpoint.
  const plan = await mysql.sale(saleId).lockForRebuild(async (locked) => {
    const replaced = await inRedis.snapshot();
    pauseHeld(saleId, replaced, pausedIn);
    return locked.switchGeneration(await observeLoss(inRedis, locked.recorded, replaced), { ...unrestorable, named });
  });
  if (!plan) throw new SaleNotFound(`sale ${saleId} is not in MySQL`);
  // Gone or gone back is not the same as reservations lost: a sale whose keys vanished before anyone
  // bought, or since its last checkpoint, lost nothing. What was lost is counted, and said, below.
  if (plan.judgement.lost)
    logger.warn(
      { saleId, reason, why: plan.judgement.why, lost: plan.lost },
      'reconcile: the Redis state replaced was gone or had gone back',
    );
  // The buyers stream from MySQL into Redis a page at a time (neither side holds them all, nor blocks on
  // them): memory and the longest Redis command stay flat whatever the number of buyers.
  const { doorLost } = await inRedis.rebuild(plan.sale, { ...plan, buyers: mysql.sale(saleId).liveBuyerPages() });
  // The rebuy rule's state is derived from MySQL's closed orders too, before the sale resumes: a buyer
  // who closed orders does not start over because Redis lost its data.
  if ((await restoreBuyerHistory(deps, saleId, plan.sale.rebuyRule)) === 'absent')
    throw new Error(`sale ${saleId} vanished from Redis during its rebuild`);
  if (doorLost) {
    // The door's record of paid units went with it: written again from MySQL (idempotent per
    // reservation), so the crowd is told sold_out once nothing can come back, as before the loss.
    let paidOrders = 0;
    for await (const page of mysql.sale(saleId).paidOrderPages()) {
      for (const order of page) await inRedis.recordPaid(order.reservationId, order.quantity);
      paidOrders += page.length;
    }
    logger.warn(
      { saleId, paidOrders },
      'reconcile: the waiting room was lost with Redis data; begun again, its buyers come back to their places with their tickets',
    );
  }
  // An operator's control committed after the rebuild read MySQL may have reached Redis before the
  // rebuild replaced the state, and been overwritten with the older controls: MySQL's are written again
  // while the sale is still paused, so it never resumes on controls older than MySQL's. A control
  // committed after this read reaches Redis after the rebuild, and applies over it.
  const current = await mysql.sale(saleId).find();
  if (current) await inRedis.applyControls(controlStateOf(current));
  await recordRebuiltCheckpoint(deps, inRedis, plan.generation, pausedIn);
  // Only the state this rebuild wrote is resumed. A failover since the check above, to a replica the
  // switch never reached, leaves the primary with the state the rebuild replaced (paused): resumed, it
  // would sell from that state. It stays paused, and the retry rebuilds it there.
  if (!(await inRedis.setPaused(false, plan.generation))) {
    throw new Error(
      `sale ${saleId} not resumed: Redis no longer holds its rebuilt generation (a failover after the rebuild?); it stays paused and is rebuilt again`,
    );
  }
  await deps.announce(saleId);

  const result: ReconcileResult = {
    saleId,
    remaining: plan.remaining,
    buyers: plan.buyerCount,
    tookMs: Math.round(performance.now() - started),
    lost: plan.lost,
    judgement: plan.judgement.lost ? 'lost' : 'intact',
    restored,
    // Only when there are: a result that names nothing reads as it did before losses were named.
    ...(unrestorable.reservations > 0 && { named: unrestorable }),
    ...(reclosed.length > 0 && { reclosed: reclosed.length }),
  };
  if (plan.lost.reservations > 0 || plan.lost.units > 0) {
    logger.error({ ...result, reason }, 'reconcile: reservations answered 202 were lost with Redis data (at least this many)');
  }
  logger.info({ ...result, reason, generation: plan.generation }, 'reconcile: sale rebuilt and resumed');
  return result;
}

/**
 * Throws unless the sale's Redis state about to be replaced (`replaced`, read with the sale row locked,
 * before the generation switch) is still paused in the history of writes `pausedIn` the pause went to. A
 * failover since the pause, to a replica the pause never reached, leaves the sale open there: the gateways
 * sell from it, and once the generation is switched in MySQL every one of those reservations would be
 * refused as stale, 202s lost. Refused here, the switch does not happen: the workers write those
 * reservations as orders of the generation they were made in, and the retry pauses the sale on the new
 * primary, drains it and rebuilds it there. (A failover after this check, before the rebuild's first
 * write, fails the rebuild at its checkpoint instead: see recordRebuiltCheckpoint.)
 */
function pauseHeld(saleId: number, replaced: SaleSnapshot, pausedIn: string | undefined): void {
  if (pausedIn !== undefined && replaced.replicationId !== undefined && replaced.replicationId !== pausedIn) {
    throw new Error(
      `sale ${saleId}: Redis's history of writes changed since the reconciliation paused the sale (replication id ${pausedIn}, now ${replaced.replicationId}: a failover); ` +
        'the new primary may never have received the pause, so nothing is switched and the reconciliation starts again there',
    );
  }
  if (replaced.present && !replaced.paused) {
    throw new Error(
      `sale ${saleId}: the reconciliation's pause is not held in Redis (a failover or a restart since?); nothing is switched and the reconciliation starts again`,
    );
  }
}

/**
 * Records the rebuilt state as the new generation's first checkpoint, still paused (nothing accepted
 * since the rebuild), in the history of writes `history` the pause went to: without it, a failover
 * after the resume and before the watch's first look would leave the new generation nothing to be judged
 * against, and the first look would take the promoted replica's state, short of what it never received,
 * as the floor. A failover during the rebuild is a history other than `history`, and fails the rebuild
 * here, before its resume: the promoted replica may have missed part of what the rebuild wrote before the
 * failover (the buyers it wrote aside, when it lagged) while the rebuild went on writing the rest there,
 * and switched that in; resumed, the sale would accept again buyers who hold orders. It stays paused, and
 * the retry rebuilds it on the new primary. Crash points: dying before this record or before the resume
 * leaves the sale paused, and the watch takes up a sale seen paused twice (another rebuild, which records
 * its own).
 */
async function recordRebuiltCheckpoint(
  deps: ReconcileDeps,
  inRedis: SaleRedis,
  generation: string,
  history: string | undefined,
): Promise<void> {
  const rebuilt = await inRedis.snapshot();
  if (!rebuilt.present || rebuilt.generation !== generation) {
    throw new Error(`sale ${inRedis.saleId} no longer holds its rebuilt generation in Redis (a failover during the rebuild?)`);
  }
  if (history !== undefined && rebuilt.replicationId !== undefined && rebuilt.replicationId !== history) {
    throw new Error(
      `sale ${inRedis.saleId}: Redis's history of writes changed during the rebuild (replication id ${history}, now ${rebuilt.replicationId}: a failover); ` +
        'the new primary may lack part of what the rebuild wrote, so the sale stays paused and is rebuilt again',
    );
  }
  const recorded = await deps.mysql.sale(inRedis.saleId).recordCheckpoint(generation, checkpointOf(rebuilt, history), null);
  // Refused only if a checkpoint of this generation is recorded already (the watch records none of a
  // paused sale): that one stands.
  if (!recorded) deps.logger.warn({ saleId: inRedis.saleId }, 'reconcile: the rebuilt state had a checkpoint already; kept');
}
