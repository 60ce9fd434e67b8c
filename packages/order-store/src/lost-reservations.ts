import type { RejectReason, Reservation } from '@flashsale/domain';
import type { Prisma, PrismaClient } from './generated/prisma/client.ts';

/**
 * Reservations answered 202 that neither store holds any more, named (lost_reservations). A
 * reconciliation finds them in Redis's buyer records after MySQL lost their orders, and records them in
 * the rebuild's transaction, with their count (lockSaleForRebuild), before Redis's state is replaced from
 * MySQL: from then on this row is all that is left of them. The workers name the entries the order
 * writer refuses for a reason that is a loss (recordRefusalsLost). Keyed by the reservation: recording
 * one again changes nothing.
 */
export interface LostReservation {
  reservationId: string;
  saleId: number;
  userId: string;
  quantity: number;
  /** Why MySQL could not take it back: the order writer's refusal (OVER_STOCK, DUPLICATE_BUYER, ...). */
  reason: string;
  /** When Redis accepted it (epoch ms), when the record still said. */
  reservedAt: number | null;
}

/** A named loss as listed for the operator: when it was found too. */
export interface LostReservationEntry extends LostReservation {
  detectedAt: Date;
}

/** Records `lost` (all of one sale); those already recorded stay as they were. */
export async function recordLostReservations(
  prisma: PrismaClient | Prisma.TransactionClient,
  lost: readonly LostReservation[],
): Promise<void> {
  if (lost.length === 0) return;
  await prisma.lostReservation.createMany({
    data: lost.map((l) => ({ ...l, reservedAt: l.reservedAt === null ? null : new Date(l.reservedAt) })),
    skipDuplicates: true,
  });
}

/**
 * The order writer's refusals that are losses: a reservation Redis accepted (answered 202) that no store
 * will ever hold as an order.
 * - STALE_GENERATION: an entry of a Redis state a rebuild has replaced since, which put its units back on
 *   sale.
 * - OVER_STOCK: Redis held more stock than MySQL (a state behind MySQL's, until it is rebuilt).
 * The others are not: a buyer refused as DUPLICATE_BUYER holds another order, and the rest are entries no
 * purchase makes (hand-written, or a bug), which the dead letters and their alert name.
 */
export type LostRefusal = Extract<RejectReason, 'STALE_GENERATION' | 'OVER_STOCK'>;
export const isLostRefusal = (reason: string): reason is LostRefusal => reason === 'STALE_GENERATION' || reason === 'OVER_STOCK';

/**
 * Refusals of a worker's batch that are losses (isLostRefusal): named here, and the sale's lost count
 * raised to at least what is named, in one transaction that takes the sale row's lock first (as order
 * batches and rebuilds do), so the names it counts include every one committed before. At least, not
 * plus: a rebuild that replaced the state that accepted them may have counted them already in its floor
 * (accepted before its checkpoint, not orders at its switch), unnamed, and a count of losses must never
 * exceed them. Keyed by the reservation: a redelivered entry is named once and moves no count again.
 */
export async function recordRefusalsLost(
  prisma: PrismaClient,
  saleId: number,
  refused: readonly { reservation: Reservation; reason: LostRefusal }[],
): Promise<void> {
  if (refused.length === 0) return;
  await prisma.$transaction(async (tx) => {
    const [sale] = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM sales WHERE id = ${saleId} FOR UPDATE`;
    if (!sale) return;
    await recordLostReservations(
      tx,
      refused.map(({ reservation: { reservationId, userId, quantity, reservedAt }, reason }) => ({
        reservationId,
        saleId,
        userId,
        quantity,
        reason,
        reservedAt,
      })),
    );
    await tx.$executeRaw`
      UPDATE sales s, (SELECT COUNT(*) AS reservations, COALESCE(SUM(quantity), 0) AS units FROM lost_reservations WHERE sale_id = ${saleId}) named
      SET s.lost_reservations = GREATEST(s.lost_reservations, named.reservations), s.lost_units = GREATEST(s.lost_units, named.units)
      WHERE s.id = ${saleId}`;
  });
}

/** The named loss of `reservationId`, or null: one primary-key read. */
export async function findLostReservation(prisma: PrismaClient, reservationId: string): Promise<LostReservation | null> {
  const row = await prisma.lostReservation.findUnique({ where: { reservationId } });
  return row ? toLost(row) : null;
}

/** A sale's named losses and their units, summed by MySQL. */
export async function countLostReservations(prisma: PrismaClient, saleId: number): Promise<{ reservations: number; units: number }> {
  const sum = await prisma.lostReservation.aggregate({ where: { saleId }, _count: { _all: true }, _sum: { quantity: true } });
  return { reservations: sum._count._all, units: sum._sum.quantity ?? 0 };
}

/**
 * One page of a sale's named losses, in reservation id order, those after `after` when given: keyset
 * paging on the (sale_id, reservation_id) index, so a page costs the same however deep it is.
 */
export async function listLostReservations(
  prisma: PrismaClient,
  saleId: number,
  { limit, after }: { limit: number; after?: string },
): Promise<{ items: LostReservationEntry[]; next: string | null }> {
  const rows = await prisma.lostReservation.findMany({
    where: { saleId, ...(after !== undefined && { reservationId: { gt: after } }) },
    orderBy: { reservationId: 'asc' },
    take: limit + 1,
  });
  const items = rows.slice(0, limit).map((row) => ({ ...toLost(row), detectedAt: row.detectedAt }));
  return { items, next: rows.length > limit ? items[items.length - 1]!.reservationId : null };
}

/** A payment event kept for the operator because it matched no reservation a store knows. */
export interface UnmatchedPayment {
  eventId: string;
  reservationId: string;
  amountCents: number;
  receivedAt: Date;
}

/** A sale's unmatched payments, oldest first, `limit` at most, and how many there are. */
export async function listUnmatchedPayments(
  prisma: PrismaClient,
  saleId: number,
  limit: number,
): Promise<{ items: UnmatchedPayment[]; total: number }> {
  const where = { saleId, outcome: 'unmatched' as const };
  const [rows, total] = await Promise.all([
    prisma.paymentEvent.findMany({ where, orderBy: { receivedAt: 'asc' }, take: limit }),
    prisma.paymentEvent.count({ where }),
  ]);
  return {
    items: rows.map((row) => ({
      eventId: row.eventId,
      reservationId: row.reservationId,
      amountCents: Number(row.amountCents),
      receivedAt: row.receivedAt,
    })),
    total,
  };
}

function toLost(row: {
  reservationId: string;
  saleId: number;
  userId: string;
  quantity: number;
  reason: string;
  reservedAt: Date | null;
}): LostReservation {
  return {
    reservationId: row.reservationId,
    saleId: row.saleId,
    userId: row.userId,
    quantity: row.quantity,
    reason: row.reason,
    reservedAt: row.reservedAt?.getTime() ?? null,
  };
}
