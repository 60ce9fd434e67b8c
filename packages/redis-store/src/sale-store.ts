import type { SaleDefinition } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import type { SaleKeys } from './keys.ts';
import { saleRef, type SaleRef, type StoreRef } from './store-ref.ts';
import { keepListed, listSaleIds, publishSale, retireSale, setSalePaused, withdrawSale } from './sale-state.ts';
import { isQueued, readGeneration, readSaleState, redisNow } from './sale-meta.ts';
import { rebuildSaleState } from './sale-rebuild.ts';
import { snapshotSale } from './sale-snapshot.ts';
import { applySaleControls } from './sale-controls.ts';
import { announceSaleChanged } from './sale-events.ts';
import { lastSeenMysqlServer, recordMysqlServerSeen } from './mysql-server-record.ts';
import { createAdminSession, deleteAdminSession, readAdminSession } from './admin-session.ts';
import {
  reservePurchase,
  type PurchaseRequest,
  type ReplicaWait,
  type ReserveOutcome,
  type UnreplicatedOutcome,
} from './reserve-purchase.ts';
import { acknowledge, claimIdleEntriesOf, keepHeld, readNewEntries, streamHasEntry } from './reservation-stream.ts';
import { orderWritersProgress, streamBacklog } from './stream-backlog.ts';
import { waitForDrain } from './stream-drain.ts';
import { trimAcknowledged } from './stream-retention.ts';
import { areSetAside, deadLetter, findDeadLetter, readDeadLettered, recentDeadLettersByReason } from './dead-letters.ts';
import { readRedisLedger } from './redis-ledger.ts';
import { readAuditRecord, writeAuditRecord } from './audit-record.ts';
import { admitQueue, joinQueue, readDoorGauges, readQueuePlace, recordPaid, showUp } from './door.ts';
import { findBuyerReservation, heldReservationPages, readAllBuyers, readBuyers, type BuyerPages } from './buyer-record.ts';
import { readClosedOrders, restoreClosedOrders } from './buyer-history.ts';
import { forgetPaymentArrivals, heldPayments, recordPaymentArrival, type PaymentContents } from './payment-arrivals.ts';
import { returnUnits, returnedReservationPages } from './stock-return.ts';
import { WorkSignaller } from './work-signal.ts';
import { readMemoryLimit, readRedisMemory } from './redis-memory.ts';
import { deleteKeysWithPrefix } from './prefix-keys.ts';

/**
 * One deployment's Redis, bound to its client and key prefix, as BullMQ binds a queue's keys and client
 * to its classes: what the application layer (packages/sales) calls, so that a use case reads as its
 * protocol (`sale.pause()`, `sale.waitForDrain(ms)`) rather than threading (redis, prefix, saleId)
 * through every step. Each method is the function of the module that owns the record it names; those
 * modules stay the owners, this only binds (store-ref.ts).
 */
export function createSaleStore(redis: ScriptedRedis, prefix: string) {
  const store: StoreRef = { redis, prefix };
  return {
    /** REDIS_PREFIX: every key of the deployment starts with it. */
    prefix,
    /** Redis's clock (TIME), the one every script judges by. */
    now: () => redisNow(redis),
    /** One sale's records (SALE_RECORDS), bound to the sale once. */
    sale: (saleId: number): SaleRedis => Object.assign(Object.create(SALE_METHODS) as SaleMethods, saleRef(redis, prefix, saleId)),
    /**
     * The whole purchase decision, one script (reserve.lua); with `wait`, the replicas it needs. Bound
     * here rather than per sale: the purchase path builds no object of a sale's records per request.
     */
    reserve: reserveIn(store),
    /** The memory of every Redis server (a cluster's masters each) against its limit. */
    memory: () => readRedisMemory(redis),
    ...bindToStore(STORE_RECORDS, store),
  };
}

/**
 * The records that span sales, or whose argument names its sale, each the function of the module that
 * owns it under the name the application layer calls it by; the store offers each with itself bound.
 */
const STORE_RECORDS = {
  /** Makes a sale live (publish-sale-2.lua); the sale names its own id. */
  publish: publishSale,
  /** Writes a sale's state from MySQL under a new generation (sale-rebuild.ts); the sale names its own id. */
  rebuild: rebuildSaleState,
  /** Records a payment's arrival at Redis's time (receive-payment-1.lua); the event names its sale. */
  recordPaymentArrival,
  /** The ids of the sales the order writers read (the sales index). */
  listSaleIds,
  /** Keeps `saleIds` in the sales index (a sale still to drain is not retired from it). */
  keepListed,
  /** The MySQL server the reconciler last saw, kept in the store that does not go back with MySQL. */
  lastSeenMysqlServer,
  recordMysqlServerSeen,
  /** The dashboard's sessions. */
  createAdminSession,
  readAdminSession,
  deleteAdminSession,
  /** The order writers' reads of several sales' streams at once (reservation-stream.ts). */
  readNewEntries,
  claimIdleEntriesOf,
  keepHeld,
  /** The gateway's signal to the workers that a sale has new reservations (work-signal.ts). */
  workSignaller: (store: StoreRef, everyMs?: number) => new WorkSignaller(store, everyMs),
  /** Deletes every key under the prefix (prefix-keys.ts): what a test, the demo or a load run leaves behind. */
  deleteAllKeys: deleteKeysWithPrefix,
} satisfies Record<string, (store: StoreRef, ...args: never[]) => unknown>;

export type SaleStore = ReturnType<typeof createSaleStore>;

/**
 * One sale's records, each the function of the module that owns it, under the name the application layer
 * calls it by; a sale's object (`sale(id)`) offers each with the sale bound, its first argument.
 */
const SALE_RECORDS = {
  /** Redis's clock on the master of the sale's slot (a cluster's masters' clocks differ). */
  now: (sale: SaleRef) => redisNow(sale.redis, sale.keys.meta),
  state: readSaleState,
  generation: readGeneration,
  isQueued,
  snapshot: snapshotSale,
  /** The memory of the sale's Redis server against its limit: over it, every purchase is refused (OOM). */
  memoryLimit: readMemoryLimit,
  publish: (sale: SaleRef, definition: SaleDefinition, generation: string, options: { notAfter?: number }) =>
    publishSale(sale, { ...definition, id: sale.saleId }, generation, options),
  withdraw: withdrawSale,
  /** False when the sale is not in Redis, or holds another generation than `generation` (when given). */
  setPaused: setSalePaused,
  applyControls: applySaleControls,
  /** Tells every gateway the sale changed, so none answers from a cached verdict. */
  announceChanged: announceSaleChanged,
  backlog: streamBacklog,
  waitForDrain,
  hasEntry: streamHasEntry,
  /** Acknowledges entries the order writers are done with (written, or found written already). */
  acknowledge,
  /** Sets an entry aside, with its reason, in one step with its acknowledgement (dead-letter-4.lua). */
  deadLetter,
  auditRecord: readAuditRecord,
  deadLetterOf: findDeadLetter,
  reservationOf: findBuyerReservation,
  heldReservationPages,
  areSetAside,
  recordPaymentArrival: (sale: SaleRef, event: Omit<PaymentContents, 'saleId'>) =>
    recordPaymentArrival(sale, { ...event, saleId: sale.saleId }),
  heldPayments,
  forgetPaymentArrivals,
  returnUnits,
  returnedReservationPages,
  rebuild: (
    sale: SaleRef,
    definition: SaleDefinition & { operatorPaused: boolean; controlsVersion: number },
    rebuilt: { remaining: number; generation: string; buyers: BuyerPages },
  ) => rebuildSaleState(sale, { ...definition, id: sale.saleId }, rebuilt),
  restoreClosedOrders,
  /** Tells the sale's door that a paid order's units can never come back. */
  recordPaid,
  /** The buyers' records, or null past `max` of them (the verdict cache holds small sales only). */
  buyers: readBuyers,
  allBuyers: readAllBuyers,
  writersProgress: orderWritersProgress,
  deadLettered: readDeadLettered,
  recentDeadLettersByReason,
  ledger: readRedisLedger,
  writeAuditRecord,
  trimAcknowledged,
  /** Takes the sale out of the workers' list (it ended and drained). */
  retire: retireSale,
  /** The door (door.ts): join, admit, a buyer's place, showing up, its gauges. */
  joinQueue,
  admitQueue,
  queuePlace: readQueuePlace,
  showUp,
  doorGauges: readDoorGauges,
  /** A buyer's closed orders as the rebuy rule counts them (buyer-history.ts). */
  closedOrders: readClosedOrders,
} satisfies Record<string, (sale: SaleRef, ...args: never[]) => unknown>;

/** A record function with its first argument, the store or the sale, bound: the same function less that argument. */
type Bound<Ref, F> = F extends (ref: Ref, ...args: infer A) => infer R ? (...args: A) => R : never;

type SaleMethods = { readonly [K in keyof typeof SALE_RECORDS]: Bound<SaleRef, (typeof SALE_RECORDS)[K]> };

/** One sale's records (SALE_RECORDS), bound to the store's client and prefix and to the sale's id and keys. */
export type SaleRedis = SaleMethods & { readonly saleId: number; readonly keys: SaleKeys };

/**
 * The prototype of every sale's object: each method passes the object itself, a SaleRef, to its record.
 * Binding a sale then costs its key names and one object, not a closure per record.
 */
const SALE_METHODS = Object.fromEntries(
  Object.entries(SALE_RECORDS).map(([name, record]) => [
    name,
    function (this: SaleRef, ...args: never[]) {
      return (record as (sale: SaleRef, ...args: never[]) => unknown)(this, ...args);
    },
  ]),
) as SaleMethods;

/** The store's records, each bound to `store` (once per store: closures are no cost there). */
function bindToStore<T extends Record<string, (store: StoreRef, ...args: never[]) => unknown>>(
  records: T,
  store: StoreRef,
): { readonly [K in keyof T]: Bound<StoreRef, T[K]> } {
  return Object.fromEntries(Object.entries(records).map(([name, record]) => [name, (...args: never[]) => record(store, ...args)])) as {
    readonly [K in keyof T]: Bound<StoreRef, T[K]>;
  };
}

/** The bound purchase, its two shapes kept (with a replica wait it may answer `unreplicated`). */
function reserveIn(store: StoreRef) {
  function reserve(request: PurchaseRequest): Promise<ReserveOutcome>;
  function reserve(request: PurchaseRequest, wait: ReplicaWait | undefined): Promise<ReserveOutcome | UnreplicatedOutcome>;
  function reserve(request: PurchaseRequest, wait?: ReplicaWait): Promise<ReserveOutcome | UnreplicatedOutcome> {
    return reservePurchase(store, request, wait);
  }
  return reserve;
}
