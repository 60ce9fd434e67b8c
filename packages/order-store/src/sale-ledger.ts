import { randomUUID } from 'node:crypto';
import type { PrismaClient } from './generated/prisma/client.ts';
import { LIVE_ORDER_STATUSES, toSaleRecord, type SaleRecord } from './sale-repository.ts';

/**
 * MySQL's side of the reconciler: which sales to watch, the checkpoints of what Redis had accepted, and
 * the rebuild transaction that switches a sale to a new Redis generation.
 */

/** How long after its end a sale is still watched: its stream may hold entries written before the end. */
const WATCH_AFTER_END_MS = 3_600_000;

/** A sale as the reconciler watches it: its record plus the last checkpoint. */
export interface WatchedSale extends SaleRecord {
  checkpoint: { reservations: number; units: number; at: number; streamId: string | null } | null;
}

export async function listWatchedSales(prisma: PrismaClient, now: number): Promise<WatchedSale[]> {
  const rows = await prisma.sale.findMany({ where: { endsAt: { gt: new Date(now - WATCH_AFTER_END_MS) }, publishState: 'published' }, orderBy: { id: 'asc' } });
  return rows.map((row) => ({ ...toSaleRecord(row), checkpoint: checkpointOf(row) }));
}

/** The sale's last checkpoint as MySQL holds it now (the watcher's list may be a moment old). */
export async function findCheckpoint(prisma: PrismaClient, saleId: number): Promise<WatchedSale['checkpoint']> {
  const row = await prisma.sale.findUnique({ where: { id: saleId } });
  return row ? checkpointOf(row) : null;
}

function checkpointOf(row: { checkpointAt: Date | null; checkpointReservations: number | null; checkpointUnits: number | null; checkpointStreamId: string | null }): WatchedSale['checkpoint'] {
  return row.checkpointAt && row.checkpointReservations !== null && row.checkpointUnits !== null
    ? { reservations: row.checkpointReservations, units: row.checkpointUnits, at: row.checkpointAt.getTime(), streamId: row.checkpointStreamId }
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
  checkpoint: { reservations: number; units: number; at: number; streamId: string | null },
  verified: { at: number } | null,
): Promise<boolean> {
  const { count } = await prisma.sale.updateMany({
    where: { id: saleId, redisGeneration: generation, checkpointAt: verified ? new Date(verified.at) : null },
    data: {
      checkpointReservations: checkpoint.reservations,
      checkpointUnits: checkpoint.units,
      checkpointAt: new Date(checkpoint.at),
      checkpointStreamId: checkpoint.streamId,
    },
  });
  return count === 1;
}

export interface RebuildPlan {
  sale: SaleRecord;
  generation: string;
  remaining: number;
  buyers: { userId: string; reservationId: string; quantity: number }[];
  /** Reservations and units answered 202 but lost with Redis's data (at least), counted by this rebuild. */
  lost: { reservations: number; units: number };
}

/**
 * Starts a rebuild: under the sale row lock (the same lock every order batch takes), switches the sale
 * to a new generation and reads what MySQL holds. From the commit on, any entry of the old Redis state
 * still in a worker's hands is refused (STALE_GENERATION), so remaining = stock - units is exact.
 *
 * When Redis lost its data, the reservations it had accepted at the last checkpoint that are not orders
 * now are counted as lost (a floor: what was accepted after the checkpoint and lost is not known).
 */
export async function beginRebuild(prisma: PrismaClient, saleId: number, { countLost }: { countLost: boolean }): Promise<RebuildPlan | null> {
  return prisma.$transaction(
    async (tx) => {
      const [locked] = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM sales WHERE id = ${saleId} FOR UPDATE`;
      if (!locked) return null;
      const row = await tx.sale.findUniqueOrThrow({ where: { id: saleId } });
      const orders = await tx.order.findMany({
        where: { saleId, status: { in: [...LIVE_ORDER_STATUSES] } },
        select: { userId: true, reservationId: true, quantity: true, reservedAt: true },
      });
      const units = orders.reduce((sum, order) => sum + order.quantity, 0);
      const lost = { reservations: 0, units: 0 };
      if (countLost && row.checkpointAt && row.checkpointReservations !== null && row.checkpointUnits !== null) {
        const survivors = orders.filter((order) => order.reservedAt <= row.checkpointAt!);
        lost.reservations = Math.max(0, row.checkpointReservations - survivors.length);
        lost.units = Math.max(0, row.checkpointUnits - survivors.reduce((sum, order) => sum + order.quantity, 0));
      }
      const generation = randomUUID();
      const updated = await tx.sale.update({
        where: { id: saleId },
        data: {
          redisGeneration: generation,
          soldUnits: units,
          lostReservations: { increment: lost.reservations },
          lostUnits: { increment: lost.units },
          // Spent: the next checkpoint is taken from the rebuilt state.
          checkpointReservations: null,
          checkpointUnits: null,
          checkpointAt: null,
          checkpointStreamId: null,
        },
      });
      return {
        sale: toSaleRecord(updated),
        generation,
        remaining: row.stock - units,
        buyers: orders.map(({ userId, reservationId, quantity }) => ({ userId, reservationId, quantity })),
        lost,
      };
    },
    { maxWait: 5_000, timeout: 60_000 },
  );
}

/**
 * Units in live orders accepted by Redis up to `at` (Redis clock), leaving out the reservations the
 * caller already counts as in flight: the audit's MySQL side.
 */
export async function unitsAcceptedBy(prisma: PrismaClient, saleId: number, at: number, inFlight: ReadonlySet<string>): Promise<number> {
  const orders = await prisma.order.findMany({
    where: { saleId, status: { in: [...LIVE_ORDER_STATUSES] }, reservedAt: { lte: new Date(at) } },
    select: { reservationId: true, quantity: true },
  });
  return orders.reduce((sum, order) => (inFlight.has(order.reservationId) ? sum : sum + order.quantity), 0);
}
