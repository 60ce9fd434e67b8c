import { Prisma, type PrismaClient } from './generated/prisma/client.ts';
import { isUniqueViolation } from './order-writer.ts';
import { countPaid } from './sale-counters.ts';
import { retryOnConflict } from './mysql-conflicts.ts';

/**
 * An order's life after it is written: paid, cancelled by its buyer, or expired unpaid. MySQL has the
 * last word on the status; every change is one conditional transaction on the order's row, so a payment
 * and an expiry (or a cancel) of the same order are ordered by its row lock and exactly one wins.
 *
 * Closing an order (cancelled, expired) also lowers the sale's sold_units and writes, in the same
 * transaction, the stock_returns row of what the order owes Redis: its units, and the sale's Redis
 * generation at the close. The Redis half (return-units-4.lua) runs after the commit and may run many
 * times; `markReturned` records that it ran. An order closes at most once (only a `created` order is
 * closed), and stock_returns is keyed by the reservation: an order cannot owe its units twice.
 *
 * Lock order, everywhere: the sale row first, then the order rows (as the order writer: the sale row,
 * then its inserts). A payment takes the order row only: it changes no stock.
 */

/** A closed order's debt to Redis: a stock_returns row. */
export interface OwedReturn {
  reservationId: string;
  saleId: number;
  userId: string;
  quantity: number;
  /** The sale's Redis generation when the order closed: the only state the return may apply to. */
  generation: string;
}

export type ClosedReason = 'expired' | 'cancelled';

/**
 * What a payment event came to: `unmatched` is a payment for a reservation no store knows, of a sale
 * that lost reservations it cannot name (kept for the operator, see packages/sales's payment intake).
 */
export type PaymentOutcome = 'paid' | 'refund_due' | 'unmatched';

/**
 * What recording a payment event came to: its outcome, or, when its id was stored before with another
 * reservation or amount, what it was stored with (nothing changed: an event id is tied to its contents).
 */
export type PaymentRecord = PaymentOutcome | { reused: { reservationId: string; amountCents: number } };

export interface PaymentEventInput {
  eventId: string;
  reservationId: string;
  saleId: number;
  amountCents: number;
}

const TX = { maxWait: 5_000, timeout: 30_000 } as const;

/**
 * Records a payment provider's event for the order of `reservationId`: the order becomes `paid` if it
 * is still `created` (a payment that lands after payBy but before the expiry got to the order still pays
 * it: the expiry, not the clock, closes the window); a payment for an order that is paid already (by
 * another event), expired or cancelled is recorded as a refund due. An event id is processed once: its
 * outcome is stored with it and a replay, even a concurrent one, answers the same. Null when there is no
 * order for the reservation (yet): nothing is recorded, the caller tells pending from unknown.
 */
export async function recordPayment(prisma: PrismaClient, event: PaymentEventInput): Promise<PaymentRecord | null> {
  const replayed = await storedOutcome(prisma, event);
  if (replayed) return replayed;
  // A payment and the expiry (or a cancel) of the same order at the same instant can deadlock in the
  // orders' indexes, and on Galera lose to a write committed on another node; MySQL rolls the loser back
  // whole, so it is run again, a few times, before the failure reaches the provider as a 503 (which it
  // would retry too, later).
  return retryOnConflict('payment', () => recordPaymentOnce(prisma, event));
}

async function recordPaymentOnce(prisma: PrismaClient, event: PaymentEventInput): Promise<PaymentRecord | null> {
  try {
    return await prisma.$transaction(
      async (tx) => {
        const [order] = await tx.$queryRaw<{ id: bigint; sale_id: number; quantity: number; status: string }[]>`
        SELECT id, sale_id, quantity, status FROM orders WHERE reservation_id = ${event.reservationId} FOR UPDATE`;
        if (!order) return null;
        // Deliveries of one event for one order queue on the order's row; the one that waited reads what
        // the first stored (a locking read sees the latest commit, not the transaction's snapshot).
        const [stored] = await tx.$queryRaw<StoredEvent[]>`
        SELECT outcome, reservation_id, amount_cents FROM payment_events WHERE event_id = ${event.eventId} FOR UPDATE`;
        if (stored) return asRecordOf(stored, event);
        let outcome: PaymentOutcome = 'refund_due';
        if (order.status === 'created') {
          await tx.$executeRaw`
          UPDATE orders SET status = 'paid', paid_at = NOW(3), payment_event_id = ${event.eventId} WHERE id = ${order.id} AND status = 'created'`;
          outcome = 'paid';
        }
        await insertPaymentEvent(tx, event, outcome);
        // Last: the paid count's slot is the only lock taken after the order row (sale-counters.ts).
        if (outcome === 'paid') await countPaid(tx, Number(order.sale_id), order.id, 1, Number(order.quantity));
        return outcome;
        // READ COMMITTED: the lookup of an event id not stored yet takes no gap lock, which under REPEATABLE
        // READ two payments of different orders would each hold while inserting into it: a deadlock.
      },
      { ...TX, isolationLevel: 'ReadCommitted' },
    );
  } catch (error) {
    // The same event id for another reservation, delivered at the same instant: the first one's stands.
    const stored = isUniqueViolation(error) ? await storedOutcome(prisma, event) : null;
    if (stored) return stored;
    throw error;
  }
}

/**
 * Records a payment for a reservation that never became an order (the workers set it aside, or it is a
 * named loss): the money is owed back (`refund_due`); or, `unmatched`, for a reservation no store knows.
 * Idempotent per event id like recordPayment; answers the stored outcome.
 */
export async function recordOrderlessPayment(
  prisma: PrismaClient,
  event: PaymentEventInput,
  outcome: 'refund_due' | 'unmatched' = 'refund_due',
): Promise<PaymentRecord> {
  try {
    await prisma.$transaction((tx) => insertPaymentEvent(tx, event, outcome), TX);
    return outcome;
  } catch (error) {
    const stored = isUniqueViolation(error) ? await storedOutcome(prisma, event) : null;
    if (stored) return stored;
    throw error;
  }
}

interface StoredEvent {
  outcome: PaymentOutcome;
  reservation_id: string;
  amount_cents: bigint | number;
}

/** The stored outcome of `event`'s id, or what the id was stored with when that was another payment. */
async function storedOutcome(prisma: PrismaClient, event: PaymentEventInput): Promise<PaymentRecord | null> {
  const [row] = await prisma.$queryRaw<
    StoredEvent[]
  >`SELECT outcome, reservation_id, amount_cents FROM payment_events WHERE event_id = ${event.eventId}`;
  return row ? asRecordOf(row, event) : null;
}

function asRecordOf(stored: StoredEvent, event: PaymentEventInput): PaymentRecord {
  // The column's collation is binary (utf8mb4_nopad_bin): ids compare byte for byte, as here.
  if (stored.reservation_id === event.reservationId && Number(stored.amount_cents) === event.amountCents) return stored.outcome;
  return { reused: { reservationId: stored.reservation_id, amountCents: Number(stored.amount_cents) } };
}

async function insertPaymentEvent(tx: Prisma.TransactionClient, event: PaymentEventInput, outcome: PaymentOutcome): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO payment_events (event_id, reservation_id, sale_id, amount_cents, outcome)
    VALUES (${event.eventId}, ${event.reservationId}, ${event.saleId}, ${event.amountCents}, ${outcome})`;
}

/** What a cancel came to: `cancelled` (now or before, with what the order owes if now), or the status that forbids it. */
export type CancelOutcome = { kind: 'cancelled'; owed: OwedReturn | null } | { kind: 'not-cancellable'; status: string };

/**
 * Cancels the buyer's order of `reservationId` if it is still awaiting payment; a cancelled order stays
 * cancelled (the answer repeats, nothing changes); a paid or expired one is refused. Null when the
 * buyer has no order for that reservation (none yet, or someone else's).
 */
export async function cancelOrder(prisma: PrismaClient, reservationId: string, userId: string): Promise<CancelOutcome | null> {
  const [found] = await prisma.$queryRaw<{ id: bigint; sale_id: number; user_id: string; status: string }[]>`
    SELECT id, sale_id, user_id, status FROM orders WHERE reservation_id = ${reservationId}`;
  if (!found || found.user_id !== userId) return null;
  // A closed order (cancelled, expired, paid) never opens again: its answer needs no lock. Only an order
  // still `created` is worth the sale row lock, so a buyer repeating a cancel costs one indexed read,
  // never a transaction queued on the lock that payments, expiry and other cancels of the sale need.
  if (found.status === 'cancelled') return { kind: 'cancelled', owed: null };
  if (found.status !== 'created') return { kind: 'not-cancellable', status: found.status };
  // Re-read under the locks, so a run after a conflict answers from what the winner did.
  return retryOnConflict('cancel', () =>
    prisma.$transaction(async (tx) => {
      const generation = await lockSale(tx, found.sale_id);
      const [order] = await tx.$queryRaw<(ClosingOrder & { status: string })[]>`
      SELECT id, reservation_id, user_id, quantity, status FROM orders WHERE id = ${found.id} FOR UPDATE`;
      if (order!.status === 'cancelled') return { kind: 'cancelled', owed: null } as const;
      if (order!.status !== 'created') return { kind: 'not-cancellable', status: order!.status } as const;
      const [owed] = await closeOrders(tx, found.sale_id, generation, [order!], 'cancelled');
      return { kind: 'cancelled', owed: owed ?? null } as const;
    }, TX),
  );
}

/** A payment event recorded on arrival (on Redis's clock) and not in MySQL yet. */
export interface ArrivedPayment {
  eventId: string;
  reservationId: string;
  amountCents: number;
  receivedAtMs: number;
}

/**
 * What the expiry of a sale must know from Redis before it closes anything: Redis's clock now (the
 * clock payBy was computed on and payments' arrivals are stamped with) and the payments that arrived
 * and are not in MySQL yet. Null when Redis cannot tell: the sale's orders are then left for a later pass.
 */
export type ArrivedPaymentsOf = (saleId: number) => Promise<{ nowMs: number; payments: ArrivedPayment[] } | null>;

/** What an expiry did. */
export interface ExpiryOutcome {
  /** What the expired orders owe Redis. */
  owed: OwedReturn[];
  /** Orders paid by a payment that arrived before their payBy and had not reached MySQL. */
  paid: number;
  /** Arrival records MySQL now holds (applied here, or before), by sale: they may be forgotten. */
  settledArrivals: Map<number, string[]>;
}

/**
 * Expires up to `limit` orders still `created` past their payBy, the ones due first, one transaction
 * per sale. Safe with any number of callers at once: each sale's orders are re-read under its row lock,
 * so an order paid or expired by someone else meanwhile is left alone.
 *
 * A payment that reached the system before an order's payBy stands even if MySQL could not take it then
 * (locked, slow, away): `arrivedPayments` tells which payments arrived (recorded in Redis on arrival)
 * and Redis's clock now, read before the sale's transaction. An order with a payment that arrived before its payBy is paid
 * by it here (the event stored with outcome `paid`, so the provider's retry answers the same); the
 * others expire only if their payBy is past on that clock. A payment recorded after that read arrived
 * after its instant, so after the payBy of every order expired here: a refund is due, rightly.
 */
export async function expireDueOrders(
  prisma: PrismaClient,
  limit: number,
  arrivedPayments: ArrivedPaymentsOf,
  skipSales: number[] = [],
): Promise<ExpiryOutcome> {
  const due = await prisma.$queryRaw<{ id: bigint; sale_id: number }[]>`
    SELECT id, sale_id FROM orders WHERE status = 'created' AND pay_by <= NOW(3)
    ${skipSales.length > 0 ? Prisma.sql`AND sale_id NOT IN (${Prisma.join(skipSales)})` : Prisma.empty}
    ORDER BY pay_by LIMIT ${limit}`;
  const bySale = new Map<number, bigint[]>();
  for (const row of due) {
    const ids = bySale.get(row.sale_id);
    if (ids) ids.push(row.id);
    else bySale.set(row.sale_id, [row.id]);
  }
  const outcome: ExpiryOutcome = { owed: [], paid: 0, settledArrivals: new Map() };
  for (const [saleId, ids] of bySale) {
    // Read before the transaction, so no lock is held across a Redis call: what matters is only that a
    // payment recorded after this read arrived after `nowMs`, and nothing due after `nowMs` is closed.
    const arrived = await arrivedPayments(saleId);
    if (!arrived) continue;
    const { nowMs, payments } = arrived;
    // The orders are read again under the sale's lock: a run after a conflict closes only what is still due.
    const sale = await retryOnConflict('expiry', () =>
      prisma.$transaction(async (tx) => {
        const generation = await lockSale(tx, saleId);
        const still = await tx.$queryRaw<(ClosingOrder & { pay_by_ms: bigint | number })[]>`
        SELECT id, reservation_id, user_id, quantity, TIMESTAMPDIFF(MICROSECOND, TIMESTAMP '1970-01-01 00:00:00', pay_by) DIV 1000 AS pay_by_ms
        FROM orders WHERE id IN (${Prisma.join(ids)}) AND status = 'created' AND pay_by <= NOW(3) FOR UPDATE`;
        const settled = await storedEventIds(
          tx,
          payments.map((p) => p.eventId),
        );
        const toClose: ClosingOrder[] = [];
        let paid = 0;
        let paidUnits = 0;
        for (const order of still) {
          const payBy = Number(order.pay_by_ms);
          const inTime = payments.find(
            (p) => p.reservationId === order.reservation_id && p.receivedAtMs < payBy && !settled.has(p.eventId),
          );
          if (inTime) {
            await tx.$executeRaw`
            UPDATE orders SET status = 'paid', paid_at = NOW(3), payment_event_id = ${inTime.eventId} WHERE id = ${order.id} AND status = 'created'`;
            await insertPaymentEvent(tx, { ...inTime, saleId }, 'paid');
            settled.add(inTime.eventId);
            paid += 1;
            paidUnits += Number(order.quantity);
          } else if (payBy <= nowMs) {
            toClose.push(order);
          }
        }
        const owed = await closeOrders(tx, saleId, generation, toClose, 'expired');
        // Last, as in recordPayment: one statement for every order this pass paid.
        if (paid > 0) await countPaid(tx, saleId, still[0]!.id, paid, paidUnits);
        return { owed, paid, settled: [...settled] };
      }, TX),
    );
    outcome.owed.push(...sale.owed);
    outcome.paid += sale.paid;
    if (sale.settled.length > 0) outcome.settledArrivals.set(saleId, sale.settled);
  }
  return outcome;
}

/** Which of these event ids MySQL holds already. */
async function storedEventIds(tx: Prisma.TransactionClient, eventIds: string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const rows = await tx.$queryRaw<{ event_id: string }[]>`SELECT event_id FROM payment_events WHERE event_id IN (${Prisma.join(eventIds)})`;
  return new Set(rows.map((row) => row.event_id));
}

/** Locks the sale row (before any of its orders) and reads the generation of its Redis state. */
async function lockSale(tx: Prisma.TransactionClient, saleId: number): Promise<string> {
  const [sale] = await tx.$queryRaw<
    { redis_generation: string | null }[]
  >`SELECT redis_generation FROM sales WHERE id = ${saleId} FOR UPDATE`;
  return sale?.redis_generation ?? '';
}

/** An order row as the closing transaction locked it. */
export interface ClosingOrder {
  id: bigint;
  reservation_id: string;
  user_id: string;
  quantity: number;
}

/**
 * Closes orders locked by the caller (all `created`, of one sale whose row the caller holds): their
 * status, the sale's sold_units and order counters, and their stock_returns rows, in the caller's transaction.
 */
export async function closeOrders(
  tx: Prisma.TransactionClient,
  saleId: number,
  generation: string,
  orders: ClosingOrder[],
  reason: ClosedReason,
): Promise<OwedReturn[]> {
  if (orders.length === 0) return [];
  const ids = orders.map((order) => order.id);
  const units = orders.reduce((sum, order) => sum + Number(order.quantity), 0);
  const closed = await tx.$executeRaw`
    UPDATE orders SET status = ${reason}, closed_at = NOW(3) WHERE id IN (${Prisma.join(ids)}) AND status = 'created'`;
  if (closed !== ids.length) throw new Error(`sale ${saleId}: ${closed} of ${ids.length} locked orders closed`);
  // The sale's order counters ride on the statement that gives the units back (sale-counters.ts).
  const cancelled = reason === 'cancelled' ? orders.length : 0;
  const expired = reason === 'expired' ? orders.length : 0;
  await tx.$executeRaw`
    UPDATE sales SET sold_units = sold_units - ${units},
      cancelled_orders = cancelled_orders + ${cancelled}, cancelled_units = cancelled_units + ${cancelled > 0 ? units : 0},
      expired_orders = expired_orders + ${expired}, expired_units = expired_units + ${expired > 0 ? units : 0}
    WHERE id = ${saleId}`;
  const owed = orders.map((order) => ({
    reservationId: order.reservation_id,
    saleId,
    userId: order.user_id,
    quantity: Number(order.quantity),
    generation,
  }));
  await tx.$executeRawUnsafe(
    `INSERT INTO stock_returns (reservation_id, sale_id, user_id, quantity, generation, reason)
     SELECT j.reservation_id, ?, j.user_id, j.quantity, ?, ?
     FROM JSON_TABLE(?, '$[*]' COLUMNS (reservation_id TEXT PATH '$[0]', user_id TEXT PATH '$[1]', quantity TEXT PATH '$[2]')) AS j`,
    saleId,
    generation,
    reason,
    JSON.stringify(owed.map((o) => [o.reservationId, o.userId, String(o.quantity)])),
  );
  return owed;
}

/** Returns still owed to Redis, the oldest first, leaving out the sales in `skipSales`. */
export async function pendingReturns(prisma: PrismaClient, limit: number, skipSales: number[] = []): Promise<OwedReturn[]> {
  const rows = await prisma.stockReturn.findMany({
    where: { state: 'pending', ...(skipSales.length > 0 && { saleId: { notIn: skipSales } }) },
    orderBy: { createdAt: 'asc' },
    take: limit,
  });
  return rows.map((row) => ({
    reservationId: row.reservationId,
    saleId: row.saleId,
    userId: row.userId,
    quantity: row.quantity,
    generation: row.generation,
  }));
}

/**
 * Records that Redis has the units of these returns back. Only a pending row changes: one a rebuild
 * settled meanwhile stays `rebuilt` (the rebuild overwrote whatever the return did to the old state).
 */
export async function markReturned(prisma: PrismaClient, reservationIds: string[]): Promise<void> {
  if (reservationIds.length === 0) return;
  await prisma.$executeRaw`
    UPDATE stock_returns SET state = 'returned', settled_at = NOW(3) WHERE reservation_id IN (${Prisma.join(reservationIds)}) AND state = 'pending'`;
}
