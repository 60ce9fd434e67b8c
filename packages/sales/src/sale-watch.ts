import type { WatchedSale } from '@flashsale/order-store';
import { acceptedUnits, isDrained, type RetentionBounds, type SaleSnapshot } from '@flashsale/redis-store';
import type { ReconcileReason } from '@flashsale/jobs';
import { holdsCheckpointEntry, judgeLoss } from './loss-judgement.ts';
import { settleStalledCreation } from './sale-creation.ts';
import { catchUpControls } from './sale-controls.ts';
import type { SalesDeps } from './sales-deps.ts';
import { checkpointOf } from './state-checkpoint.ts';
import { isStoreUnavailable } from './store-failures.ts';
import { WatchStepOverdueError } from './watch-deadline.ts';

/** What the watcher concluded about one sale's Redis state. */
export type Verdict = { kind: 'healthy' } | { kind: 'paused' } | { kind: 'reconcile'; reason: ReconcileReason; why: string };

/** The watcher's verdict (pure): a loss first (see judgeLoss), then a pause, else healthy. */
export function judge(sale: WatchedSale, snapshot: SaleSnapshot, checkpointEntryPresent = true): Verdict {
  const loss = judgeLoss(sale, snapshot, checkpointEntryPresent);
  if (loss.lost) return { kind: 'reconcile', reason: loss.reason, why: loss.why };
  return snapshot.paused ? { kind: 'paused' } : { kind: 'healthy' };
}

/**
 * The reconciler's watch over the sales: the stores, the watch's settings, and where its requests and
 * failures go. It holds no state of its own: what one look leaves for the next (a sale seen paused) is
 * kept by the loop that makes the looks (apps/reconciler/src/watch-loop.ts) and passed back in.
 */
export interface SaleWatch extends SalesDeps {
  /** A sale published less than this ago (MySQL's clock) is left alone: its publish may not have landed yet. */
  publishGraceMs: number;
  /** How long a create may stay unfinished before the watcher abandons it (MySQL's clock). */
  createGraceMs: number;
  /** How long acknowledged entries stay in a stream after they were added, beyond the checkpoint's. */
  retentionMs: number;
  /** Past this many entries, acknowledged ones go whatever their age (RECONCILER_STREAM_RETENTION_ENTRIES); none when absent. */
  retentionEntries?: number;
  /** How long after its end a sale is still watched (RECONCILER_WATCH_AFTER_END_MS, MySQL's clock). */
  watchAfterEndMs: number;
  /** How long after its end a drained sale stays in the workers' list (RECONCILER_RETIRE_AFTER_END_MS, Redis's clock). */
  retireAfterEndMs: number;
  /** Told of a sale whose watch failed this pass (counted in the reconciler's metrics). */
  onSaleError?(saleId: number, error: unknown): void;
  requestReconcile(saleId: number, reason: ReconcileReason): Promise<void>;
}

/**
 * The start of a round of looks: finishes the creates left unfinished, then lists the sales to watch
 * (settled ones are looked at; see WatchedSale.settled).
 */
export async function listSalesToWatch(deps: SaleWatch): Promise<WatchedSale[]> {
  await settleStalledCreations(deps);
  return deps.mysql.listWatchedSales({ watchAfterEndMs: deps.watchAfterEndMs, publishGraceMs: deps.publishGraceMs });
}

/** The ids of the sales the watch covers now (MySQL's list, as listSalesToWatch reads it), for a pass that makes no look of its own. */
export async function watchedSaleIds(deps: Pick<SalesDeps, 'mysql'>, watchAfterEndMs: number): Promise<number[]> {
  return (await deps.mysql.listWatchedSales({ watchAfterEndMs })).map((sale) => sale.id);
}

/** What a look is told by the loop that makes it. */
export interface LookTerms {
  /** Whether the previous look at this sale found it paused (by a reconciliation): see watchSale. */
  pausedBefore?: boolean;
  /** Aborted once the look is overdue (see withinDeadline): it writes nothing more. */
  signal?: AbortSignal;
}

/** One look at one sale: its verdict, its record as it stands after the look, and what Redis showed. */
export interface SaleVisit {
  verdict: Verdict;
  /** The sale with the checkpoint MySQL holds after this look (recorded by it, or read again). */
  sale: WatchedSale;
  snapshot: SaleSnapshot;
  /** Whether Redis accepted anything since the checkpoint (or the state needs attention): look again soon. */
  changed: boolean;
}

/**
 * Looks at one listed sale: what a pass does for each. A pass asks for a reconciliation where Redis lost
 * or holds a stale state, and records a checkpoint of what a healthy state has accepted (the floor of
 * what a later loss destroyed). Run by the reconciler's own loop, not as a BullMQ job, because a Redis
 * that lost its data has lost BullMQ's schedules too. Its own failure is logged and counted
 * (forOneSale) and yields undefined; Redis or MySQL being away throws. A sale seen paused at two looks
 * running (`pausedBefore`, this one's verdict `paused`) is taken up again (see watchSale). Once `signal`
 * is aborted (the look is overdue: see withinDeadline) it writes nothing more.
 */
export async function watchOneSale(
  deps: SaleWatch,
  sale: WatchedSale,
  { pausedBefore = false, signal }: LookTerms = {},
): Promise<SaleVisit | undefined> {
  let visit: SaleVisit | undefined;
  await forOneSale(deps, sale.id, 'not watched this pass', async () => {
    visit = await watchSale(deps, sale, pausedBefore, signal);
  });
  return visit;
}

async function watchSale(deps: SaleWatch, listed: WatchedSale, pausedBefore: boolean, signal?: AbortSignal): Promise<SaleVisit> {
  // Called before each write: a look given up on writes nothing from what it read (a newer look may
  // have moved on since), and logs no verdict (the next look judges again).
  const stillWanted = () => signal?.throwIfAborted();
  let sale = listed;
  let snapshot = await deps.redis.sale(sale.id).snapshot();
  // Counters can catch up with the checkpoint within one pass after Redis went back (a restart from an
  // older AOF or a lagging replica under load); the checkpoint's last stream entry cannot come back.
  let checkpointEntryPresent = await holdsCheckpointEntry(deps.redis.sale(sale.id), sale.checkpoint, snapshot);
  // Another reconciler may have recorded a newer checkpoint and trimmed the stream up to the one listed
  // here since the list was read: judged again on the checkpoint MySQL holds now, with a snapshot taken
  // after reading it (so its counters are not older than the checkpoint's). A few times, should that
  // reconciler be quick enough to move on again in between; a checkpoint that stays put is the verdict.
  for (let attempt = 0; !checkpointEntryPresent && attempt < 3; attempt++) {
    const fresh = await deps.mysql.sale(sale.id).findCheckpoint();
    if (!fresh || fresh.at === sale.checkpoint?.at) break;
    sale = { ...sale, checkpoint: fresh };
    snapshot = await deps.redis.sale(sale.id).snapshot();
    checkpointEntryPresent = await holdsCheckpointEntry(deps.redis.sale(sale.id), sale.checkpoint, snapshot);
  }
  let verdict = judge(sale, snapshot, checkpointEntryPresent);
  if (verdict.kind === 'reconcile' && verdict.reason === 'stale') {
    // The sales were listed before this snapshot: a reconciliation may have switched the generation
    // in between. Judged again against MySQL now, so a rebuild just done is not started over.
    const fresh = await deps.mysql.sale(sale.id).find();
    if (fresh && fresh.generation !== sale.generation) {
      verdict = judge({ ...sale, generation: fresh.generation, checkpoint: null }, snapshot);
      // The record the next look starts from: the new generation, and whatever checkpoint it has now.
      sale = { ...sale, generation: fresh.generation, checkpoint: await deps.mysql.sale(sale.id).findCheckpoint() };
    }
  }
  const visit = (changed: boolean): SaleVisit => ({ verdict, sale, snapshot, changed });
  stillWanted();
  if (verdict.kind !== 'reconcile' && snapshot.controlsVersion < sale.controlsVersion)
    await catchUpControls(deps, sale, snapshot.controlsVersion);
  if (verdict.kind === 'reconcile') {
    deps.logger.warn({ saleId: sale.id, reason: verdict.reason, why: verdict.why }, 'sale state needs reconciling');
    await deps.requestReconcile(sale.id, verdict.reason);
    return visit(true);
  } else if (verdict.kind === 'paused') {
    // Only a reconciliation pauses a sale. Queued or running, this is a no-op (one job id per sale);
    // if it died and gave up (BullMQ failed it after its retries or stalls), the sale would stay paused
    // forever: this takes it up again. Only when seen paused two passes running, so a reconciliation
    // that resumed the sale a moment ago is not started again.
    if (pausedBefore) await deps.requestReconcile(sale.id, 'interrupted');
    return visit(true);
  } else if (unchangedSince(sale.checkpoint, snapshot)) {
    // Nothing accepted since the checkpoint: it stands as it is (an idle sale costs no MySQL write per
    // pass). What the workers acknowledged since may still go, below the checkpoint this pass verified;
    // a stream down to the checkpoint's own entry has nothing to give (an idle look is one script call).
    if (snapshot.streamLength > 1) await retain(deps, sale.id, retentionBounds(deps, sale.checkpoint!.streamId, snapshot));
    return visit(false);
  } else {
    const checkpoint = checkpointOf(snapshot);
    stillWanted();
    const recorded = await deps.mysql.sale(sale.id).recordCheckpoint(sale.generation, checkpoint, sale.checkpoint);
    // Retention: what the workers have acknowledged is an order (or a dead letter) now, and goes, up to
    // the checkpoint this pass found in place and replaced: a checkpoint is only ever replaced by one
    // recorded after its entry was seen, so every reconciler checks an entry at or after it. Not when
    // the record was refused (another reconciler moved on, or the generation changed under this pass).
    const verified = sale.checkpoint?.streamId;
    if (recorded && verified && !signal?.aborted) await retain(deps, sale.id, retentionBounds(deps, verified, snapshot));
    // The next look compares with the checkpoint MySQL holds: this one, or (refused) the one that won.
    sale = { ...sale, checkpoint: recorded ? checkpoint : await deps.mysql.sale(sale.id).findCheckpoint() };
    return visit(true);
  }
}

/** Whether the state has accepted nothing since the checkpoint (same buyers, units, last stream entry and server history). */
function unchangedSince(checkpoint: WatchedSale['checkpoint'], snapshot: SaleSnapshot): boolean {
  return (
    checkpoint !== null &&
    checkpoint.reservations === snapshot.buyers &&
    checkpoint.units === acceptedUnits(snapshot) &&
    checkpoint.streamId === snapshot.lastEntryId &&
    // A checkpoint recorded without the server's replication id is taken again once, with it.
    (checkpoint.replicationId ?? null) === (snapshot.replicationId ?? null)
  );
}

/** Finishes the creates left unfinished for longer than the grace (settleStalledCreation), each on its own. */
async function settleStalledCreations(deps: SaleWatch): Promise<void> {
  for (const sale of await deps.mysql.listStalledCreations(deps.createGraceMs)) {
    await forOneSale(deps, sale.id, 'create not settled this pass', () => settleStalledCreation(deps, sale));
  }
}

/**
 * What retention keeps: from the verified checkpoint's entry on, and what is young or within the entries
 * bound. Not for their age while Redis refuses writes for memory: acknowledged entries are then the one
 * thing the system can free by itself (they are orders in MySQL, or dead letters with their own copy),
 * and waiting out RECONCILER_STREAM_RETENTION_MS would leave every purchase refused meanwhile.
 */
function retentionBounds(deps: SaleWatch, keepFrom: string | null, snapshot: SaleSnapshot): RetentionBounds {
  if (snapshot.memory.refusesWrites) return { keepFrom, keepSinceMs: null };
  return { keepFrom, keepSinceMs: snapshot.at - deps.retentionMs, maxEntries: deps.retentionEntries ?? null };
}

/** Trims the stream (see trimAcknowledged); a failure is logged, and the next pass trims instead. */
async function retain(deps: SaleWatch, saleId: number, bounds: RetentionBounds): Promise<void> {
  try {
    const removed = await deps.redis.sale(saleId).trimAcknowledged(bounds);
    if (removed > 0) deps.logger.debug({ saleId, removed }, 'acknowledged stream entries trimmed');
  } catch (error) {
    deps.logger.warn({ err: error, saleId }, 'stream not trimmed this pass');
  }
}

/**
 * Keeps the workers' list of sales to the ones that may still have work: a sale ended `retireAfterEndMs`
 * ago (on Redis's clock) whose stream has drained is taken out, so idle workers do not poll every sale
 * ever published.
 */
export async function retireFinishedSales(deps: SaleWatch, watched: WatchedSale[]): Promise<void> {
  const endsAtOfWatched = new Map(watched.map((sale) => [sale.id, sale.endsAt]));
  const now = await deps.redis.now();
  // Retiring frees (SREM, allowed when Redis is out of memory) and goes first; putting sales back adds
  // (SADD, refused then) and goes last.
  for (const saleId of await deps.redis.listSaleIds()) {
    const endsAt = endsAtOfWatched.get(saleId) ?? (await deps.mysql.sale(saleId).find())?.endsAt;
    if (endsAt === undefined || now < endsAt + deps.retireAfterEndMs) continue;
    await forOneSale(deps, saleId, 'not retired this pass', async () => {
      const backlog = await deps.redis.sale(saleId).backlog();
      if (isDrained(backlog)) {
        await deps.redis.sale(saleId).retire();
        deps.logger.info({ saleId }, 'sale ended and drained: no longer polled by the workers');
      }
    });
  }
  // The list itself may have been lost on its own (on a cluster, with the one master that holds it):
  // every watched sale not yet due to retire is put back (see keepListed).
  await deps.redis.keepListed(watched.filter((sale) => now < sale.endsAt + deps.retireAfterEndMs).map((sale) => sale.id));
}

/**
 * Runs one sale's part of a pass: its failure (a key of the wrong type, a row that fails) is logged
 * and counted, and the pass goes on with the other sales. Redis or MySQL being away is not one sale's:
 * it fails the pass (logged once), and the next pass tries again.
 */
async function forOneSale(deps: SaleWatch, saleId: number, what: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    // An overdue look's own abort: already logged and counted where it was given up.
    if (isStoreUnavailable(error) || error instanceof WatchStepOverdueError) throw error;
    deps.onSaleError?.(saleId, error);
    deps.logger.error({ err: error, saleId }, `sale ${what}: its state could not be read or changed`);
  }
}
