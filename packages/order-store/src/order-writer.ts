import type { RejectReason, Reservation } from '@flashsale/domain';
import { Prisma, type PrismaClient } from './generated/prisma/client.ts';
import { retryOnConflict } from './mysql-conflicts.ts';

/**
 * What became of a batch, entry by entry: the reservations given back are the very objects passed in, so
 * a caller that passes more than a Reservation (the worker: its stream entry id) gets that back too.
 */
export interface BatchOutcome<R extends Reservation = Reservation> {
  /** New orders written by this batch. */
  written: R[];
  /** Already orders: a redelivered entry (worker died after commit, before XACK). */
  replayed: R[];
  rejected: { reservation: R; reason: RejectReason }[];
}

/**
 * Writes one batch of a sale's reservations as orders, in one transaction, idempotently.
 *
 * Every batch takes the sale row's lock first: batches of one sale from several workers then run one
 * after the other, sold_units is raised from a value nobody else is changing, and the reconciler's
 * rebuild (which switches redis_generation under the same lock) is fenced off. The unique keys
 * (reservation_id; sale_id + live_user_id) and the CHECK sold_units <= stock stay as the last line of
 * defence should anything here be wrong.
 */
export async function writeOrderBatch<R extends Reservation>(prisma: PrismaClient, saleId: number, batch: R[]): Promise<BatchOutcome<R>> {
  if (batch.length === 0) return { written: [], replayed: [], rejected: [] };
  // A conflict's loser (a deadlock, a Galera certification conflict at COMMIT) wrote nothing: the batch
  // is judged again from the start, so an entry the winner wrote meanwhile is found replayed.
  return retryOnConflict('order_batch', () => writeBatchOnce(prisma, saleId, batch));
}

async function writeBatchOnce<R extends Reservation>(prisma: PrismaClient, saleId: number, batch: R[]): Promise<BatchOutcome<R>> {
  if (isPlainBatch(batch)) {
    try {
      // Almost every batch is new reservations of new buyers: write it without looking anything up.
      return await writeWithoutLookups(prisma, saleId, batch);
    } catch (error) {
      if (!(error instanceof NeedsLookup) && !isUniqueViolation(error)) throw error;
      // A redelivered reservation or a buyer who already has an order (the unique keys refused the
      // batch), or a guard refused it: nothing was written. Decide entry by entry below.
    }
  }
  try {
    return await writeWithLookups(prisma, saleId, batch);
  } catch (error) {
    // The lookups saw no conflict, yet a unique key still refuses the batch: MySQL judges two ids equal
    // that the writer does not. Retrying cannot help; the worker sets the offending entry aside.
    if (isUniqueViolation(error)) throw new UnexplainedConflict(error);
    throw error;
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

/**
 * One generation, no reservation or buyer twice, whole quantities: the batch can be written whole or not
 * at all (the per-user limit is the quick pass's UPDATE's to check).
 */
function isPlainBatch(batch: Reservation[]): boolean {
  const generation = batch[0]!.generation;
  const reservations = new Set<string>();
  const buyers = new Set<string>();
  for (const r of batch) {
    if (r.generation !== generation || !isWholeQuantity(r.quantity) || reservations.has(r.reservationId) || buyers.has(r.userId))
      return false;
    reservations.add(r.reservationId);
    buyers.add(r.userId);
  }
  return true;
}

/** At least 1 and whole: what the reserve script accepts, and the orders table's CHECK requires. */
function isWholeQuantity(quantity: number): boolean {
  return Number.isSafeInteger(quantity) && quantity >= 1;
}

/**
 * The quick pass, one round trip: the `write_new_orders` procedure (migration
 * 20261126090000_order_batch_procedures) runs, in a transaction of its own, the guarded UPDATE (it takes
 * the sale row's lock, checks generation, stock and the per-user limit, and counts the batch:
 * sale-counters.ts) and the INSERT, which relies on the unique keys to refuse a redelivered entry or a
 * buyer who already has a live order. Any refusal rolls everything back: a guard's is raised as
 * NEEDS_LOOKUPS, a unique key's as MySQL gives it. Four round trips through Prisma's interactive
 * transaction (BEGIN, UPDATE, INSERT, COMMIT) were most of a worker's CPU per batch.
 */
async function writeWithoutLookups<R extends Reservation>(prisma: PrismaClient, saleId: number, batch: R[]): Promise<BatchOutcome<R>> {
  const units = batch.reduce((sum, r) => sum + r.quantity, 0);
  const largest = batch.reduce((max, r) => Math.max(max, r.quantity), 0);
  try {
    await prisma.$executeRaw`CALL write_new_orders(${saleId}, ${batch[0]!.generation}, ${batch.length}, ${units}, ${largest}, ${ordersJson(batch)})`;
  } catch (error) {
    const code = serverErrorCode(error);
    // The sale is missing, was rebuilt under another generation, has fewer units left than the batch, or
    // an entry is over its per-user limit.
    if (code === NEEDS_LOOKUPS) throw new NeedsLookup();
    if (code === SHORT_INSERT)
      throw new Error(`sale ${saleId}: fewer orders inserted than the batch of ${batch.length} holds`, { cause: error });
    throw error;
  }
  return { written: batch, replayed: [], rejected: [] };
}

/** The error numbers `write_new_orders` raises (SQLSTATE 45000): a guard refused the batch; the INSERT came short. */
const NEEDS_LOOKUPS = '31001';
const SHORT_INSERT = '31002';

/**
 * The careful pass: lock the sale row, look up which entries MySQL already holds, and judge each entry
 * (replayed, a quantity no purchase can have, stale, duplicate buyer, over stock, or written). A
 * redelivered entry is recognised as written (acknowledged) before anything else is judged; then the
 * entry's own quantity, wrong whatever the state of the sale.
 */
async function writeWithLookups<R extends Reservation>(prisma: PrismaClient, saleId: number, batch: R[]): Promise<BatchOutcome<R>> {
  const outcome: BatchOutcome<R> = { written: [], replayed: [], rejected: [] };
  return prisma.$transaction(
    async (tx) => {
      const [sale] = await tx.$queryRaw<{ stock: number; sold_units: number; per_user_limit: number; redis_generation: string | null }[]>`
        SELECT stock, sold_units, per_user_limit, redis_generation FROM sales WHERE id = ${saleId} FOR UPDATE`;
      if (!sale) {
        outcome.rejected = batch.map((reservation) => ({ reservation, reason: 'SALE_NOT_FOUND' as const }));
        return outcome;
      }
      // Two lookups on unique indexes (reservation_id; sale_id + live_user_id) rather than one OR, which
      // MySQL answers with a slower index merge. A buyer whose order was cancelled or expired has no live
      // one (live_user_id is NULL then) and may buy again.
      const existing = await tx.$queryRaw<{ reservation_id: string; live_user_id: string | null }[]>`
        SELECT reservation_id, live_user_id FROM orders WHERE reservation_id IN (${Prisma.join(batch.map((r) => r.reservationId))})
        UNION ALL
        SELECT reservation_id, live_user_id FROM orders WHERE sale_id = ${saleId} AND live_user_id IN (${Prisma.join(batch.map((r) => r.userId))})`;
      const existingReservations = new Set(existing.map((order) => order.reservation_id));
      const buyersWithOrders = new Set(existing.flatMap((order) => (order.live_user_id === null ? [] : [order.live_user_id])));
      const stock = Number(sale.stock);
      const limit = Number(sale.per_user_limit);
      let sold = Number(sale.sold_units);
      for (const reservation of batch) {
        if (existingReservations.has(reservation.reservationId)) {
          outcome.replayed.push(reservation);
        } else if (!isWholeQuantity(reservation.quantity)) {
          outcome.rejected.push({ reservation, reason: 'INVALID_QUANTITY' });
        } else if (reservation.quantity > limit) {
          outcome.rejected.push({ reservation, reason: 'OVER_USER_LIMIT' });
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
      if (outcome.written.length === 0) return outcome;
      await insertOrders(tx, saleId, outcome.written);
      const units = sold - Number(sale.sold_units);
      // The sale's order counters ride on the same statement (sale-counters.ts).
      const updated = await tx.$executeRaw`
        UPDATE sales SET sold_units = sold_units + ${units}, orders_written = orders_written + ${outcome.written.length}, units_written = units_written + ${units}
        WHERE id = ${saleId} AND sold_units + ${units} <= stock`;
      if (updated !== 1) throw new Error(`sale ${saleId}: guarded sold_units update refused ${units} units`);
      return outcome;
    },
    { maxWait: 5_000, timeout: 30_000 },
  );
}

/**
 * The rows of a batch as ONE parameter, a JSON array that MySQL unpacks with JSON_TABLE (the
 * `insert_orders_from_json` procedure says how): with one placeholder per value (2,500 for a batch of
 * 500), Prisma spent longer in JavaScript on the parameters than MySQL took to store the rows.
 */
function ordersJson(rows: Reservation[]): string {
  return JSON.stringify(rows.map((r) => [r.reservationId, r.userId, String(r.quantity), String(r.reservedAt)]));
}

/** The careful pass's INSERT, in its transaction: the procedure the quick pass runs too, and its count. */
async function insertOrders(tx: Prisma.TransactionClient, saleId: number, rows: Reservation[]): Promise<void> {
  await tx.$executeRaw`CALL insert_orders_from_json(${saleId}, ${ordersJson(rows)}, @flashsale_inserted)`;
  const [{ inserted }] = await tx.$queryRaw<[{ inserted: number | bigint }]>`SELECT @flashsale_inserted AS inserted`;
  if (Number(inserted) !== rows.length) throw new Error(`sale ${saleId}: ${inserted} orders inserted of ${rows.length}`);
}

/** The server's error number of a failed statement, where Prisma's MariaDB adapter (this client) or its query engine reports it. */
function serverErrorCode(error: unknown): string {
  const e = error as { meta?: { code?: string; driverAdapterError?: { cause?: { originalCode?: string } } } };
  return String(e.meta?.driverAdapterError?.cause?.originalCode ?? e.meta?.code ?? '');
}

/** MySQL's duplicate-key error (1062), as Prisma reports it for a raw statement or a model call. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; meta?: { code?: string; driverAdapterError?: { cause?: { kind?: string } } }; message?: string };
  return (
    e.code === 'P2002' ||
    e.meta?.code === '1062' ||
    e.meta?.driverAdapterError?.cause?.kind === 'UniqueConstraintViolation' ||
    /\b1062\b|Duplicate entry/.test(e.message ?? '')
  );
}

/**
 * An error MySQL will give for this data however often it is retried: a value too long or out of
 * range, a constraint or foreign key refusing it. Anything else (connection lost, lock wait timeout,
 * deadlock, pool or transaction timeout) passes, and the write is retried.
 */
export function isPermanentWriteError(error: unknown): boolean {
  if (error instanceof UnexplainedConflict) return true;
  const e = error as { code?: string; message?: string };
  if (['P2000', 'P2003', 'P2004', 'P2011', 'P2020'].includes(e.code ?? '')) return true;
  const serverCode = serverErrorCode(error);
  if (['1048', '1264', '1265', '1292', '1366', '1406', '1452', '3819', '4025'].includes(serverCode)) return true;
  return /Data too long|Data truncated|Out of range value|Incorrect \w+ value|cannot be null|foreign key constraint fails|CONSTRAINT `[^`]+` failed|Check constraint/i.test(
    e.message ?? '',
  );
}
