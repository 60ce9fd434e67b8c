import type { SaleStore } from '@flashsale/redis-store';
import type { PrismaClient } from '@flashsale/order-store';
import { ledgerOf } from '@flashsale/harness';

export interface SaleInvariants {
  saleId: number;
  /** Accepted reservations (202) with no order in MySQL. */
  lost: number;
  /** Reservation ids or buyers with more than one order. */
  duplicated: number;
  /** Orders with no accepted reservation behind them. */
  unexpected: number;
  /** Units sold beyond the stock: in orders, or in orders plus what Redis still offers. */
  oversold: number;
  /** Units in orders + remaining in Redis = stock, as the contract requires once nothing is in flight. */
  balanced: boolean;
  stock: number;
  unitsInDb: number;
  remaining: number;
}

/**
 * The contract's invariants for one sale, once its stream has drained. The accepted reservations are the
 * client's own list of 202s when it has one (the Node runner); otherwise (after k6) the sale's buyers hash
 * in Redis, where the reserve script records every reservation it accepted.
 */
export async function checkSaleInvariants(
  store: SaleStore,
  prisma: PrismaClient,
  saleId: number,
  accepted?: Map<string, { userId: string; quantity: number }>,
): Promise<SaleInvariants> {
  const inRedis = store.sale(saleId);
  await inRedis.waitForDrain(120_000);
  let reservations = accepted;
  if (!reservations) {
    reservations = new Map();
    for (const { userId, reservationId, quantity } of await inRedis.allBuyers()) reservations.set(reservationId, { userId, quantity });
  }
  const ledger = await ledgerOf(store, prisma, saleId, reservations);
  return {
    saleId,
    lost: ledger.lost.length,
    duplicated: ledger.duplicated.length,
    unexpected: ledger.unexpected.length,
    oversold: Math.max(0, ledger.unitsInDb - ledger.stock, ledger.unitsInDb + ledger.remaining - ledger.stock),
    balanced: ledger.unitsInDb + ledger.remaining === ledger.stock,
    stock: ledger.stock,
    unitsInDb: ledger.unitsInDb,
    remaining: ledger.remaining,
  };
}

export function invariantsHold(checks: SaleInvariants[]): boolean {
  return checks.every((c) => c.lost === 0 && c.duplicated === 0 && c.unexpected === 0 && c.oversold === 0 && c.balanced);
}
