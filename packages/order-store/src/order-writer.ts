import type { Reservation } from '@flashsale/redis-store';
import { Prisma, type PrismaClient } from './generated/prisma/client.ts';

/** Why a reservation could not become an order. Each is kept in the dead-letter stream, never dropped. */
export type RejectReason =
  /** The sale is not in MySQL. */
  | 'SALE_NOT_FOUND'
  /** The buyer already has an order for this sale under another reservation (Redis lost its buyers). */
  | 'DUPLICATE_BUYER'
  /** The order would put more units in orders than the sale has (Redis held more stock than MySQL). */
  | 'OVER_STOCK'
  /**
   * The entry belongs to a Redis state of the sale that has since been rebuilt. The rebuild counted
   * only what MySQL held, so writing it now would sell its units twice: it is refused, and counted as a
   * reservation lost with Redis's data. Only a Redis data loss can cause it: after a planned
   * reconciliation the stream has drained before the rebuild.
   */
  | 'STALE_GENERATION';

export interface BatchOutcome {
  /** New orders written by this batch. */
  written: Reservation[];
  /** Already orders: a redelivered entry (worker died after commit, before XACK). */
  replayed: Reservation[];
  rejected: { reservation: Reservation; reason: RejectReason }[];
}

/**
 * Writes one batch of a sale's reservations as orders, in one transaction, idempotently.
 *
 * The sale row is locked first (FOR UPDATE): batches of one sale from several workers then run one after
 * the other, so the replay and duplicate checks below see every committed order and sold_units is raised
 * from a value nobody else is changing. The unique keys (reservation_id; sale_id + user_id) and the
 * CHECK sold_units <= stock stay as the last line of defence should anything here be wrong.
 */
export async function writeOrderBatch(prisma: PrismaClient, saleId: number, batch: Reservation[]): Promise<BatchOutcome> {
  if (batch.length === 0) return { written: [], replayed: [], rejected: [] };
  try {
    // Almost every batch is new reservations of new buyers: write it without looking anything up.
    return await writeInTransaction(prisma, saleId, batch, false);
  } catch (error) {
    if (!(error instanceof NeedsLookup) && !isUniqueViolation(error)) throw error;
    // A redelivered reservation or a buyer who already has an order (the unique keys refused the batch),
    // or an entry to refuse: nothing was written. Look up what MySQL holds, so that a redelivered
    // entry is recognised as written (acknowledged) before anything is judged over stock or stale.
    try {
      return await writeInTransaction(prisma, saleId, batch, true);
    } catch (retryError) {
      // The lookups saw no conflict, yet a unique key still refuses the batch: MySQL judges two ids equal
      // that the writer does not. Retrying cannot help; the worker sets the offending entry aside.
      if (isUniqueViolation(retryError)) throw new UnexplainedConflict(retryError);
      throw retryError;
    }
  }
}

/** A unique key refusal the lookups cannot explain: permanent for this data (see isPermanentWriteError). */
class UnexplainedConflict extends Error {
  constructor(cause: unknown) {
    super(`a unique key refuses the batch though no existing order explains it: ${(cause as Error).message}`, { cause });
  }
}

/** Rolls back the quick pass: a refusal is only ever decided with the lookups done. */
class NeedsLookup extends Error {}

async function writeInTransaction(prisma: PrismaClient, saleId: number, batch: Reservation[], lookUpExisting: boolean): Promise<BatchOutcome> {
  const outcome: BatchOutcome = { written: [], replayed: [], rejected: [] };
  return prisma.$transaction(
    async (tx) => {
      // The lock is also the fence against a rebuild: the reconciler switches redis_generation under the
      // same lock, so a batch either commits before it (and is counted) or sees the new generation.
      const [sale] = await tx.$queryRaw<{ stock: number; sold_units: number; redis_generation: string | null }[]>`
        SELECT stock, sold_units, redis_generation FROM sales WHERE id = ${saleId} FOR UPDATE`;
      if (!sale) {
        outcome.rejected = batch.map((reservation) => ({ reservation, reason: 'SALE_NOT_FOUND' as const }));
        return outcome;
      }
      let existing: { reservation_id: string; user_id: string }[] = [];
      if (lookUpExisting) {
        // Two lookups on unique indexes (reservation_id; sale_id + user_id) rather than one OR, which
        // MySQL answers with a slower index merge.
        const reservationIds = Prisma.join(batch.map((r) => r.reservationId));
        const userIds = Prisma.join(batch.map((r) => r.userId));
        existing = await tx.$queryRaw<{ reservation_id: string; user_id: string }[]>`
          SELECT reservation_id, user_id FROM orders WHERE reservation_id IN (${reservationIds})
          UNION ALL
          SELECT reservation_id, user_id FROM orders WHERE sale_id = ${saleId} AND user_id IN (${userIds})`;
      }
      const existingReservations = new Set(existing.map((order) => order.reservation_id));
      const buyersWithOrders = new Set(existing.map((order) => order.user_id));
      const stock = Number(sale.stock);
      let sold = Number(sale.sold_units);
      for (const reservation of batch) {
        if (existingReservations.has(reservation.reservationId)) {
          outcome.replayed.push(reservation);
        } else if (reservation.generation !== sale.redis_generation) {
          outcome.rejected.push({ reservation, reason: 'STALE_GENERATION' });
        } else if (buyersWithOrders.has(reservation.userId)) {
          outcome.rejected.push({ reservation, reason: 'DUPLICATE_BUYER' });
        } else if (sold + reservation.quantity > stock) {
          outcome.rejected.push({ reservation, reason: 'OVER_STOCK' });
        } else {
          outcome.written.push(reservation);
          buyersWithOrders.add(reservation.userId);
          // The same id twice in one batch (a redelivery racing its original) is written once.
          existingReservations.add(reservation.reservationId);
          sold += reservation.quantity;
        }
      }
      if (!lookUpExisting && outcome.rejected.length > 0) throw new NeedsLookup();
      if (outcome.written.length === 0) return outcome;
      // One multi-row INSERT with placeholders (values are bound, never spliced in): Prisma's createMany,
      // and even Prisma.sql fragments, spend several times longer in JavaScript on a 500-row batch than
      // the statement takes in MySQL, which made them the drain's bottleneck.
      const values: unknown[] = [];
      for (const r of outcome.written) values.push(r.reservationId, saleId, r.userId, r.quantity, new Date(r.reservedAt));
      await tx.$executeRawUnsafe(insertOrdersSql(outcome.written.length), ...values);
      const units = sold - Number(sale.sold_units);
      const updated = await tx.$executeRaw`UPDATE sales SET sold_units = sold_units + ${units} WHERE id = ${saleId} AND sold_units + ${units} <= stock`;
      if (updated !== 1) throw new Error(`sale ${saleId}: guarded sold_units update refused ${units} units`);
      return outcome;
    },
    { maxWait: 5_000, timeout: 30_000 },
  );
}

/** MySQL's duplicate-key error (1062), as Prisma reports it for a raw statement or a model call. */
function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; meta?: { code?: string; driverAdapterError?: { cause?: { kind?: string } } }; message?: string };
  return (
    e.code === 'P2002' ||
    e.meta?.code === '1062' ||
    e.meta?.driverAdapterError?.cause?.kind === 'UniqueConstraintViolation' ||
    /\b1062\b|Duplicate entry/.test(e.message ?? '')
  );
}

const insertStatements = new Map<number, string>();

/** `INSERT INTO orders ... VALUES (?, ?, ?, ?, 'created', ?), ...` for `rows` rows, built once per size. */
function insertOrdersSql(rows: number): string {
  let sql = insertStatements.get(rows);
  if (!sql) {
    sql = `INSERT INTO orders (reservation_id, sale_id, user_id, quantity, status, reserved_at) VALUES ${Array(rows).fill("(?, ?, ?, ?, 'created', ?)").join(', ')}`;
    insertStatements.set(rows, sql);
  }
  return sql;
}

/**
 * An error MySQL will give for this data however often it is retried: a value too long or out of
 * range, a constraint or foreign key refusing it. Anything else (connection lost, lock wait timeout,
 * deadlock, pool or transaction timeout) passes, and the write is retried.
 */
export function isPermanentWriteError(error: unknown): boolean {
  if (error instanceof UnexplainedConflict) return true;
  const e = error as { code?: string; meta?: { code?: string }; message?: string };
  if (['P2000', 'P2003', 'P2004', 'P2011', 'P2020'].includes(e.code ?? '')) return true;
  if (['1048', '1264', '1366', '1406', '1452', '3819', '4025'].includes(String(e.meta?.code ?? ''))) return true;
  return /Data too long|Out of range value|Incorrect \w+ value|foreign key constraint fails|CONSTRAINT `[^`]+` failed|Check constraint/i.test(e.message ?? '');
}
