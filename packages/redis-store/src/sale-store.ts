import type { DeadLetterReason, RebuyRule, SaleControlState, SaleDefinition } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';
import { publishSale, setSalePaused, withdrawSale } from './sale-state.ts';
import { readGeneration, readSaleState, redisNow } from './sale-meta.ts';
import { applySaleControls } from './sale-controls.ts';
import { announceSaleChanged } from './sale-events.ts';
import { streamBacklog } from './stream-backlog.ts';
import { waitForDrain } from './stream-drain.ts';
import { readAuditRecord } from './audit-record.ts';
import { areSetAside, deadLetter, findDeadLetter } from './dead-letters.ts';
import { findBuyerReservation, heldReservationPages, type BuyerPages } from './buyer-record.ts';
import { forgetPaymentArrivals, heldPayments, recordPaymentArrival, type PaymentContents } from './payment-arrivals.ts';
import { returnUnits, returnedReservationPages, type UnitsToReturn } from './stock-return.ts';
import { rebuildSaleState } from './sale-rebuild.ts';
import { restoreClosedOrders, type BuyerClosedOrders } from './buyer-history.ts';
import { recordPaid } from './door.ts';
import { snapshotSale } from './sale-snapshot.ts';
import { readMemoryLimit } from './redis-memory.ts';
import { acknowledge, streamHasEntry, type StreamEntry } from './reservation-stream.ts';

/**
 * One deployment's Redis, bound to its client and key prefix, as BullMQ binds a queue's keys and client
 * to its classes: what the application layer (packages/sales) calls, so that a use case reads as its
 * protocol (`sale.pause()`, `sale.waitForDrain(ms)`) rather than threading (redis, prefix, saleId)
 * through every step. Each method is the function of the module that owns the record it names; those
 * modules stay the owners, this only binds.
 */
export function createSaleStore(redis: ScriptedRedis, prefix: string) {
  return {
    /** Redis's clock (TIME), the one every script judges by. */
    now: () => redisNow(redis),
    /** One sale's records. */
    sale: (saleId: number) => bindSale(redis, prefix, saleId),
  };
}

export type SaleStore = ReturnType<typeof createSaleStore>;
export type SaleRedis = ReturnType<typeof bindSale>;

function bindSale(redis: ScriptedRedis, prefix: string, saleId: number) {
  const keys = saleKeys(prefix, saleId);
  return {
    saleId,
    keys,
    /** Redis's clock on the master of the sale's slot (a cluster's masters' clocks differ). */
    now: () => redisNow(redis, keys.meta),
    state: () => readSaleState(redis, prefix, saleId),
    generation: () => readGeneration(redis, prefix, saleId),
    snapshot: () => snapshotSale(redis, prefix, saleId),
    /** The memory of the sale's Redis server against its limit: over it, every purchase is refused (OOM). */
    memoryLimit: () => readMemoryLimit(redis, prefix, saleId),
    publish: (sale: SaleDefinition, generation: string, options: { notAfter?: number }) => publishSale(redis, prefix, { ...sale, id: saleId }, generation, options),
    withdraw: (generation: string) => withdrawSale(redis, prefix, saleId, generation),
    /** False when the sale is not in Redis, or holds another generation than `generation` (when given). */
    setPaused: (paused: boolean, generation?: string) => setSalePaused(redis, prefix, saleId, paused, generation),
    applyControls: (controls: SaleControlState) => applySaleControls(redis, prefix, saleId, controls),
    /** Tells every gateway the sale changed, so none answers from a cached verdict. */
    announceChanged: () => announceSaleChanged(redis, prefix, saleId),
    backlog: () => streamBacklog(redis, prefix, saleId),
    waitForDrain: (timeoutMs: number) => waitForDrain(redis, prefix, saleId, timeoutMs),
    hasEntry: (entryId: string) => streamHasEntry(redis, prefix, saleId, entryId),
    /** Acknowledges entries the order writers are done with (written, or found written already). */
    acknowledge: (entryIds: string[]) => acknowledge(redis, prefix, saleId, entryIds),
    /** Sets an entry aside, with its reason, in one step with its acknowledgement (dead-letter-4.lua). */
    deadLetter: (entry: StreamEntry, reason: DeadLetterReason, deliveries: number) => deadLetter(redis, prefix, saleId, entry, reason, deliveries),
    auditRecord: () => readAuditRecord(redis, prefix, saleId),
    deadLetterOf: (reservationId: string) => findDeadLetter(redis, prefix, saleId, reservationId),
    reservationOf: (userId: string) => findBuyerReservation(redis, prefix, saleId, userId),
    heldReservationPages: (pageSize: number) => heldReservationPages(redis, prefix, saleId, pageSize),
    areSetAside: (reservationIds: readonly string[]) => areSetAside(redis, prefix, saleId, reservationIds),
    recordPaymentArrival: (event: Omit<PaymentContents, 'saleId'>) => recordPaymentArrival(redis, prefix, { ...event, saleId }),
    heldPayments: () => heldPayments(redis, prefix, saleId),
    forgetPaymentArrivals: (eventIds: string[]) => forgetPaymentArrivals(redis, prefix, saleId, eventIds),
    returnUnits: (generation: string, orders: UnitsToReturn[]) => returnUnits(redis, prefix, saleId, generation, orders),
    returnedReservationPages: (pageSize: number) => returnedReservationPages(redis, prefix, saleId, pageSize),
    rebuild: (sale: SaleDefinition & { operatorPaused: boolean; controlsVersion: number }, rebuilt: { remaining: number; generation: string; buyers: BuyerPages }) =>
      rebuildSaleState(redis, prefix, { ...sale, id: saleId }, rebuilt),
    restoreClosedOrders: (rule: RebuyRule, buyers: BuyerClosedOrders[]) => restoreClosedOrders(redis, prefix, saleId, rule, buyers),
    /** Tells the sale's door that a paid order's units can never come back. */
    recordPaid: (reservationId: string, units: number) => recordPaid(redis, prefix, saleId, reservationId, units),
  };
}
