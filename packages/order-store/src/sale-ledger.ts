import { randomUUID } from 'node:crypto';
import { Prisma, type PrismaClient } from './generated/prisma/client.ts';
import { recordLostReservations, type LostReservation } from './lost-reservations.ts';
import { LIVE_ORDER_STATUSES, toSaleRecord, type SaleRecord } from './sale-repository.ts';
import { readingClusterCommits } from './cluster-reads.ts';

/**
 * MySQL's side of the reconciler: which sales to watch, the checkpoints of what Redis had accepted, and
 * the rebuild transaction that switches a sale to a new Redis generation.
 */

/** A checkpoint: what Redis had accepted at `at` (Redis's clock), and the stream's last entry then. */
export interface Checkpoint {
  reservations: number;
  units: number;
  at: number;
  streamId: string | null;
  /**
   * The replication id of the Redis server that held the state (INFO's master_replid); absent when it
   * was not known (a checkpoint recorded before it was kept).
   */
  replicationId?: string | null;
}

/** A sale as the reconciler watches it: its record plus the last checkpoint. */
export interface WatchedSale extends SaleRecord {
  checkpoint: Checkpoint | null;
  /** Published at least the publish grace ago, on MySQL's clock: its publish to Redis has had time to land. */
  settled: boolean;
}

/**
 * The sales to watch: published, and not ended more than `watchAfterEndMs` ago
 * (RECONCILER_WATCH_AFTER_END_MS: a sale's stream may hold entries written before its end). Both times
 * are judged on MySQL's clock (NOW(3) in the statement), never the reconciler's: a reconciler whose clock
 * runs hours ahead would otherwise stop watching a sale still selling, and one behind would judge a sale
 * before its publish could land.
 */
export async function listWatchedSales(
  prisma: PrismaClient,
  { watchAfterEndMs, publishGraceMs = 0 }: { watchAfterEndMs: number; publishGraceMs?: number },
): Promise<WatchedSale[]> {
  const listed = await prisma.$queryRaw<{ id: number; settled: number | bigint }[]>`
    SELECT id, created_at <= NOW(3) - INTERVAL ${publishGraceMs * 1000} MICROSECOND AS settled
    FROM sales
    WHERE publish_state = 'published' AND ends_at > NOW(3) - INTERVAL ${watchAfterEndMs * 1000} MICROSECOND`;
  if (listed.length === 0) return [];
  const settled = new Map(listed.map((row) => [Number(row.id), Number(row.settled) === 1]));
  const rows = await prisma.sale.findMany({ where: { id: { in: [...settled.keys()] } }, orderBy: { id: 'asc' } });
  return rows.map((row) => ({ ...toSaleRecord(row), checkpoint: checkpointOf(row), settled: settled.get(row.id) ?? false }));
}

/** The sale's last checkpoint as MySQL holds it now (the watcher's list may be a moment old). */
export async function findCheckpoint(prisma: PrismaClient, saleId: number): Promise<Checkpoint | null> {
  const row = await prisma.sale.findUnique({ where: { id: saleId } });
  return row ? checkpointOf(row) : null;
}

function checkpointOf(row: {
  checkpointAt: Date | null;
  checkpointReservations: number | null;
  checkpointUnits: number | null;
  checkpointStreamId: string | null;
  checkpointReplicationId: string | null;
}): Checkpoint | null {
  return row.checkpointAt && row.checkpointReservations !== null && row.checkpointUnits !== null
    ? {
        reservations: row.checkpointReservations,
        units: row.checkpointUnits,
        at: row.checkpointAt.getTime(),
        streamId: row.checkpointStreamId,
        ...(row.checkpointReplicationId !== null && { replicationId: row.checkpointReplicationId }),
      }
    : null;
}

/**
 * Records what Redis had accepted at `at` (Redis clock), in place of the checkpoint `verified` (the one
 * the caller judged the state against; null when there was none). Only for the generation it was read
 * from: a checkpoint of a state that has since been rebuilt would count its buyers against the new one.
 * Only if MySQL still holds `verified`: with several reconcilers, one whose view is older does not
 * replace a checkpoint another recorded since (that would erase the evidence should Redis have gone back
 * in between), whatever the clocks say. Returns whether it was recorded.
 */
export async function recordCheckpoint(
  prisma: PrismaClient,
  saleId: number,
  generation: string,
  checkpoint: Checkpoint,
  verified: { at: number } | null,
): Promise<boolean> {
  const { count } = await prisma.sale.updateMany({
    where: { id: saleId, redisGeneration: generation, checkpointAt: verified ? new Date(verified.at) : null },
    data: checkpointColumns(checkpoint),
  });
  return count === 1;
}

/** The sale row's columns that hold a checkpoint. */
export function checkpointColumns(checkpoint: Checkpoint) {
  return {
    checkpointReservations: checkpoint.reservations,
    checkpointUnits: checkpoint.units,
    checkpointAt: new Date(checkpoint.at),
    checkpointStreamId: checkpoint.streamId,
    checkpointReplicationId: checkpoint.replicationId ?? null,
  };
}

export interface RebuildPlan {
  sale: SaleRecord;
  generation: string;
  remaining: number;
  /** How many live orders (buyers) the sale had at the switch: liveBuyerPages reads them. */
  buyerCount: number;
  /** What the rebuild concluded about the state it replaces, before it replaced the checkpoint. */
  judgement: LossJudgement;
  /** Reservations and units answered 202 but lost with Redis's data (at least), counted by this rebuild. */
  lost: { reservations: number; units: number };
}

/** Whether the Redis state about to be replaced lost reservations MySQL's record says it had accepted. */
export type LossJudgement = { lost: false } | { lost: true; why: string };

/** What MySQL recorded of the sale's Redis state, read with the sale row locked: the generation and the last checkpoint. */
export interface RecordedState {
  generation: string;
  checkpoint: Checkpoint | null;
}

/** Lost besides the checkpoint's count: reservations Redis held that MySQL refused to take back, and those of them known by id. */
export interface AlsoLost {
  reservations: number;
  units: number;
  /** Named (lost_reservations) in the transaction that counts them. */
  named?: readonly LostReservation[];
}

/** The sale row, locked for a rebuild: what MySQL recorded of its Redis state, and the switch to a new generation. */
export interface LockedForRebuild {
  readonly recorded: RecordedState;
  /**
   * Switches the sale to a new generation and reads what MySQL holds, counting what the replaced state
   * lost (`judgement`, made by the caller while the row is locked, and `alsoLost`) in the same
   * transaction that clears the checkpoint: a rebuild can never erase the evidence of a loss. Lost are
   * the reservations Redis had accepted at the checkpoint that are not orders now (a floor: what was
   * accepted after the checkpoint and lost is not known). Once per lock.
   */
  switchGeneration(judgement: LossJudgement, alsoLost?: AlsoLost): Promise<RebuildPlan>;
}

/**
 * Locks the sale row (the same lock every order batch takes) for the length of `work`, which judges the
 * state being replaced and calls switchGeneration. From the commit on, any entry of the old Redis state
 * still in a worker's hands is refused (STALE_GENERATION), so remaining = stock - units is exact; and no
 * checkpoint can be recorded between the caller's judgement and the switch that replaces it. Null when
 * MySQL has no such sale.
 */
export async function lockSaleForRebuild(
  prisma: PrismaClient,
  saleId: number,
  work: (locked: LockedForRebuild) => Promise<RebuildPlan>,
): Promise<RebuildPlan | null> {
  return prisma.$transaction(
    async (tx) => {
      // The rebuild counts what MySQL holds: all of it, on whichever Galera node it reaches (cluster-reads.ts).
      await readingClusterCommits(tx);
      const [locked] = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM sales WHERE id = ${saleId} FOR UPDATE`;
      if (!locked) return null;
      const row = await tx.sale.findUniqueOrThrow({ where: { id: saleId } });
      const checkpoint = checkpointOf(row);
      return work({
        recorded: { generation: row.redisGeneration ?? '', checkpoint },
        switchGeneration: (judgement, alsoLost = { reservations: 0, units: 0 }) =>
          switchGeneration(tx, row, checkpoint, judgement, alsoLost),
      });
    },
    { maxWait: 5_000, timeout: 60_000 },
  );
}

async function switchGeneration(
  tx: Prisma.TransactionClient,
  row: { id: number; stock: number },
  checkpoint: Checkpoint | null,
  judgement: LossJudgement,
  alsoLost: AlsoLost,
): Promise<RebuildPlan> {
  const saleId = row.id;
  // Counted by MySQL on the (sale_id, live_user_id) index: the buyers themselves are read page by page
  // after the commit (liveBuyerPages), never all held here.
  const [live] = await tx.$queryRaw<{ orders: bigint; units: unknown }[]>`
    SELECT COUNT(*) AS orders, COALESCE(SUM(quantity), 0) AS units FROM orders WHERE sale_id = ${saleId} AND live_user_id IS NOT NULL`;
  const units = Number(live!.units);
  const lost = { reservations: alsoLost.reservations, units: alsoLost.units };
  if (alsoLost.named?.length) await recordLostReservations(tx, alsoLost.named);
  if (judgement.lost && checkpoint) {
    // What the checkpoint counted and is still an order: the live orders, and those that closed in
    // the state it describes (their reservations and units stay counted as accepted there, see
    // SaleSnapshot); an order closed before that state began was never in it.
    const [survivors] = await tx.$queryRaw<{ reservations: bigint; units: unknown }[]>`
      SELECT COUNT(*) AS reservations, COALESCE(SUM(quantity), 0) AS units FROM orders
      WHERE sale_id = ${saleId} AND reserved_at <= TIMESTAMPADD(MICROSECOND, ${checkpoint.at} * 1000, TIMESTAMP '1970-01-01 00:00:00')
        AND (status IN ('created', 'paid')
          OR closed_at >= (SELECT COALESCE(generation_at, TIMESTAMP '1970-01-01 00:00:00') FROM sales WHERE id = ${saleId}))`;
    lost.reservations += Math.max(0, checkpoint.reservations - Number(survivors!.reservations));
    lost.units += Math.max(0, checkpoint.units - Number(survivors!.units));
  }
  // Units owed back to the state being replaced are counted as remaining by this rebuild (their
  // orders are not live): the returns are settled here, and the return script refuses them anyway
  // once Redis holds the new generation.
  await tx.$executeRaw`
    UPDATE stock_returns SET state = 'rebuilt', settled_at = NOW(3) WHERE sale_id = ${saleId} AND state = 'pending'`;
  const generation = randomUUID();
  const updated = await tx.sale.update({
    where: { id: saleId },
    data: {
      redisGeneration: generation,
      soldUnits: units,
      lostReservations: { increment: lost.reservations },
      lostUnits: { increment: lost.units },
      // Spent: the rebuild records the next one from the rebuilt state before it resumes.
      checkpointReservations: null,
      checkpointUnits: null,
      checkpointAt: null,
      checkpointStreamId: null,
      checkpointReplicationId: null,
    },
  });
  // MySQL's clock, as closed_at is: the loss count above compares the two.
  await tx.$executeRaw`UPDATE sales SET generation_at = NOW(3) WHERE id = ${saleId}`;
  return {
    sale: toSaleRecord(updated),
    generation,
    remaining: row.stock - units,
    buyerCount: Number(live!.orders),
    judgement,
    lost,
  };
}

/** A live order's buyer, as a rebuild records it in Redis. */
export interface LiveBuyer {
  userId: string;
  reservationId: string;
  quantity: number;
  /** When Redis accepted the reservation (epoch ms). */
  reservedAt: number;
}

/** Buyers per page of liveBuyerPages: a few hundred kB of rows in memory, a few ms of MySQL per page. */
export const LIVE_BUYERS_PER_PAGE = 5_000;

/**
 * The buyers of a sale's live orders, page after page, each page one statement on the unique index
 * (sale_id, live_user_id) from where the last one stopped (keyset, never OFFSET): every page costs the
 * same and only one is held at a time, whatever the number of buyers.
 *
 * Read after the rebuild's switch (lockSaleForRebuild) committed, not in its snapshot: the sale is paused and its stream drained, and
 * the new generation refuses any entry of the old state, so no order can become live meanwhile. An order
 * may close (a cancel, an expiry): its row leaves the index, a page read after that leaves its buyer out,
 * one read before keeps it; either way its stock_returns row, of the new generation, gives the units back
 * and removes the buyer's record once the new state is in Redis (return-units-4.lua refuses it before).
 */
export async function* liveBuyerPages(prisma: PrismaClient, saleId: number, pageSize = LIVE_BUYERS_PER_PAGE): AsyncGenerator<LiveBuyer[]> {
  let after: string | null = null;
  for (;;) {
    const rows: { live_user_id: string; reservation_id: string; quantity: number; reserved_at_ms: bigint | number }[] =
      await prisma.$queryRaw`
      SELECT live_user_id, reservation_id, quantity,
        TIMESTAMPDIFF(MICROSECOND, TIMESTAMP '1970-01-01 00:00:00', reserved_at) DIV 1000 AS reserved_at_ms
      FROM orders FORCE INDEX (orders_sale_id_live_user_id_key)
      WHERE sale_id = ${saleId} AND live_user_id ${after === null ? Prisma.sql`IS NOT NULL` : Prisma.sql`> ${after}`}
      ORDER BY live_user_id LIMIT ${pageSize}`;
    if (rows.length === 0) return;
    yield rows.map((row) => ({
      userId: row.live_user_id,
      reservationId: row.reservation_id,
      quantity: Number(row.quantity),
      reservedAt: Number(row.reserved_at_ms),
    }));
    if (rows.length < pageSize) return;
    after = rows[rows.length - 1]!.live_user_id;
  }
}

/**
 * Units in live orders accepted by Redis up to `at` (Redis clock), leaving out the reservations the
 * caller already counts as in flight: the audit's MySQL side. With `closedIn` (a Redis generation), plus
 * the units of the orders that closed (cancelled, expired) while that generation was the sale's: owed
 * back to it or given back already (stock_returns of that generation); the audit takes what it gave back
 * (the state's returned units) off the other side. Summed by MySQL (the (sale_id, reserved_at)
 * index), and the in-flight ones looked up by id: the cost follows what is in flight, never the number of
 * orders the sale has taken (a million rows read into memory on every audit was the reconciler's growth).
 */
export async function unitsAcceptedBy(
  prisma: PrismaClient,
  saleId: number,
  at: number,
  inFlight: ReadonlySet<string>,
  closedIn?: string,
): Promise<number> {
  const statuses = [...LIVE_ORDER_STATUSES];
  const ids = [...inFlight];
  // Every sum from one snapshot (REPEATABLE READ: the first read fixes it): an order a worker commits
  // between two of them would be missing from the total yet taken off as in flight, a unit counted nowhere.
  return prisma.$transaction(
    async (tx) => {
      // An audit short of orders a worker had acknowledged would queue a reconciliation of a live sale.
      await readingClusterCommits(tx);
      const total = await tx.order.aggregate({
        where: { saleId, status: { in: statuses }, reservedAt: { lte: new Date(at) } },
        _sum: { quantity: true },
      });
      let counted = 0;
      for (let i = 0; i < ids.length; i += IN_FLIGHT_PAGE) {
        const page = await tx.order.aggregate({
          where: {
            saleId,
            status: { in: statuses },
            reservedAt: { lte: new Date(at) },
            reservationId: { in: ids.slice(i, i + IN_FLIGHT_PAGE) },
          },
          _sum: { quantity: true },
        });
        counted += page._sum.quantity ?? 0;
      }
      let closed = 0;
      if (closedIn !== undefined) {
        const [row] = await tx.$queryRaw<{ units: unknown }[]>`
          SELECT COALESCE(SUM(r.quantity), 0) AS units FROM stock_returns r JOIN orders o ON o.reservation_id = r.reservation_id
          WHERE r.sale_id = ${saleId} AND r.generation = ${closedIn}
            AND o.reserved_at <= TIMESTAMPADD(MICROSECOND, ${at} * 1000, TIMESTAMP '1970-01-01 00:00:00')`;
        closed = Number(row!.units);
      }
      return (total._sum.quantity ?? 0) - counted + closed;
    },
    { isolationLevel: 'RepeatableRead' },
  );
}

/** Reservation ids per lookup of the ones in flight that are already orders (one statement each). */
const IN_FLIGHT_PAGE = 1000;
