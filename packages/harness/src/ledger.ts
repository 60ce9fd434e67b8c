import type { SaleStore } from '@flashsale/redis-store';
import { LIVE_ORDER_STATUSES, type PrismaClient } from '@flashsale/order-store';

/** Every order of a sale, by reservation id. */
export async function ordersOf(prisma: PrismaClient, saleId: number) {
  return prisma.order.findMany({ where: { saleId }, orderBy: { id: 'asc' } });
}

export interface Ledger {
  /** 202s with no order. */
  lost: string[];
  /** Reservation ids or buyers with more than one order. */
  duplicated: string[];
  /** Orders with no 202 behind them. */
  unexpected: string[];
  unitsInDb: number;
  remaining: number;
  stock: number;
}

/** An order as the ledger compares it with the 202s. */
export interface LedgerOrder {
  reservationId: string;
  userId: string;
  quantity: number;
  status: string;
}

/**
 * The ledger of a sale (pure): every 202 must have become exactly one order of the same buyer and
 * quantity, no order may exist without a 202, and no buyer may hold two live orders (one whose order
 * was cancelled or expired may have bought again).
 */
export function compareLedger(
  accepted: ReadonlyMap<string, { userId: string; quantity: number }>,
  orders: readonly LedgerOrder[],
  { remaining, stock }: { remaining: number; stock: number },
): Ledger {
  const byReservation = new Map<string, number>();
  const byBuyer = new Map<string, number>();
  const live = orders.filter((o) => (LIVE_ORDER_STATUSES as readonly string[]).includes(o.status));
  for (const order of orders) byReservation.set(order.reservationId, (byReservation.get(order.reservationId) ?? 0) + 1);
  for (const order of live) byBuyer.set(order.userId, (byBuyer.get(order.userId) ?? 0) + 1);
  const mismatched = orders.filter((o) => {
    const a = accepted.get(o.reservationId);
    return a !== undefined && (a.userId !== o.userId || a.quantity !== o.quantity);
  });
  return {
    lost: [...accepted.keys()].filter((id) => !byReservation.has(id)),
    duplicated: [
      ...[...byReservation].filter(([, n]) => n > 1).map(([id]) => id),
      ...[...byBuyer].filter(([, n]) => n > 1).map(([u]) => `buyer:${u}`),
    ],
    unexpected: [
      ...orders.filter((o) => !accepted.has(o.reservationId)).map((o) => o.reservationId),
      ...mismatched.map((o) => `mismatch:${o.reservationId}`),
    ],
    unitsInDb: live.reduce((sum, o) => sum + o.quantity, 0),
    remaining,
    stock,
  };
}

/**
 * Compares the 202s a test received with what MySQL holds, after the drain: the invariants every run
 * must keep (nothing lost, nothing doubled, nothing unexpected, never more units than stock).
 */
export async function ledgerOf(
  store: SaleStore,
  prisma: PrismaClient,
  saleId: number,
  accepted: Map<string, { userId: string; quantity: number }>,
): Promise<Ledger> {
  const sale = await prisma.sale.findUniqueOrThrow({ where: { id: saleId } });
  // MySQL and Redis are read one after the other, while an expiry or a cancel may move units from an
  // order back to `remaining` between the two reads (on a busy machine a payment window can run out
  // before a test or the demo looks). Two collections in a row that agree are a moment's true state.
  const collect = async () => {
    const orders = await ordersOf(prisma, saleId);
    const state = await store.sale(saleId).state();
    return compareLedger(accepted, orders, { remaining: state?.remaining ?? Number.NaN, stock: sale.stock });
  };
  let ledger = await collect();
  for (let attempt = 0; attempt < 100; attempt++) {
    const again = await collect();
    if (again.unitsInDb === ledger.unitsInDb && again.remaining === ledger.remaining) return again;
    ledger = again;
  }
  return ledger;
}

/** Entries of a sale's stream still pending in the order writers' group. */
export async function pendingCount(store: SaleStore, saleId: number): Promise<number> {
  return (await store.sale(saleId).backlog()).pending;
}

export interface FaultLedger extends Ledger {
  /** Requests without a clear answer (killed gateway, 5xx while Redis died) that did become orders. */
  unknownBecameOrders: number;
  /** Requests without a clear answer that became nothing. */
  unknownBecameNothing: number;
  /** Units in live orders above stock (must be 0). */
  oversold: number;
}

/**
 * The ledger of a run where processes were killed (pure): like compareLedger, but an order of a buyer
 * whose request got no clear answer is not "unexpected" (the reservation may have landed just before
 * the crash); such requests are counted as having become an order or nothing.
 */
export function compareFaultLedger(
  accepted: ReadonlyMap<string, { userId: string; quantity: number }>,
  orders: readonly LedgerOrder[],
  uncertainBuyers: ReadonlySet<string>,
  sale: { remaining: number; stock: number },
): FaultLedger {
  const base = compareLedger(accepted, orders, sale);
  const byId = new Map(orders.map((o) => [o.reservationId, o]));
  const unexpected = base.unexpected.filter((id) => {
    const order = byId.get(id);
    return !(order && uncertainBuyers.has(order.userId));
  });
  const uncertainWithOrder = new Set(
    orders.filter((o) => uncertainBuyers.has(o.userId) && !accepted.has(o.reservationId)).map((o) => o.userId),
  );
  return {
    ...base,
    unexpected,
    unknownBecameOrders: uncertainWithOrder.size,
    unknownBecameNothing: uncertainBuyers.size - uncertainWithOrder.size,
    oversold: Math.max(0, base.unitsInDb - base.stock),
  };
}

/** compareFaultLedger over what Redis and MySQL hold for the sale now. */
export async function faultLedgerOf(
  store: SaleStore,
  prisma: PrismaClient,
  saleId: number,
  accepted: Map<string, { userId: string; quantity: number }>,
  uncertainBuyers: ReadonlySet<string>,
): Promise<FaultLedger> {
  const orders = await ordersOf(prisma, saleId);
  const state = await store.sale(saleId).state();
  const sale = await prisma.sale.findUniqueOrThrow({ where: { id: saleId } });
  return compareFaultLedger(accepted, orders, uncertainBuyers, { remaining: state?.remaining ?? Number.NaN, stock: sale.stock });
}
