import type { DeadLetterReason, RebuyRule, SaleControlState, SaleDefinition } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';
import { publishSale, setSalePaused, withdrawSale } from './sale-state.ts';
import { isQueued, readGeneration, readSaleState, redisNow } from './sale-meta.ts';
import { keepListed, listSaleIds, retireSale } from './sale-state.ts';
import { lastSeenMysqlServer, recordMysqlServerSeen } from './mysql-server-record.ts';
import { createAdminSession, deleteAdminSession, readAdminSession, type AdminSessionLifetime } from './admin-session.ts';
import { reservePurchase, type PurchaseRequest, type ReplicaWait, type ReserveOutcome, type UnreplicatedOutcome } from './reserve-purchase.ts';
import { orderWritersProgress } from './stream-backlog.ts';
import { readDeadLettered, recentDeadLettersByReason } from './dead-letters.ts';
import { readRedisLedger } from './redis-ledger.ts';
import { writeAuditRecord, type AuditRecord } from './audit-record.ts';
import { trimAcknowledged, type RetentionBounds } from './stream-retention.ts';
import { admitQueue, joinQueue, readDoorGauges, readQueuePlace, showUp, type JoinSolution } from './door.ts';
import { readAllBuyers, readBuyers } from './buyer-record.ts';
import { claimIdleEntriesOf, keepHeld, readNewEntries } from './reservation-stream.ts';
import { WorkSignaller } from './work-signal.ts';
import { readRedisMemory } from './redis-memory.ts';
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
import { readClosedOrders, restoreClosedOrders, type BuyerClosedOrders } from './buyer-history.ts';
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
    /** REDIS_PREFIX: every key of the deployment starts with it. */
    prefix,
    /** Redis's clock (TIME), the one every script judges by. */
    now: () => redisNow(redis),
    /** One sale's records. */
    sale: (saleId: number) => bindSale(redis, prefix, saleId),
    /**
     * The whole purchase decision, one script (reserve-6.lua); with `wait`, the replicas it needs. Bound
     * here rather than per sale: the purchase path builds no object of a sale's records per request.
     */
    reserve: reserveIn(redis, prefix),
    /** Makes a sale live (publish-sale-2.lua); the sale names its own id. */
    publish: (sale: SaleDefinition, generation: string, options?: { notAfter?: number }) => publishSale(redis, prefix, sale, generation, options),
    /** Writes a sale's state from MySQL under a new generation (sale-rebuild.ts); the sale names its own id. */
    rebuild: (
      sale: SaleDefinition & { operatorPaused: boolean; controlsVersion: number },
      rebuilt: { remaining: number; generation: string; buyers: BuyerPages },
      doorRestoreMs?: number,
    ) => rebuildSaleState(redis, prefix, sale, rebuilt, doorRestoreMs),
    /** Records a payment's arrival at Redis's time (receive-payment-1.lua); the event names its sale. */
    recordPaymentArrival: (event: PaymentContents) => recordPaymentArrival(redis, prefix, event),
    /** The ids of the sales the order writers read (the sales index). */
    listSaleIds: () => listSaleIds(redis, prefix),
    /** Keeps `saleIds` in the sales index (a sale still to drain is not retired from it). */
    keepListed: (saleIds: readonly number[]) => keepListed(redis, prefix, saleIds),
    /** The MySQL server the reconciler last saw, kept in the store that does not go back with MySQL. */
    lastSeenMysqlServer: () => lastSeenMysqlServer(redis, prefix),
    recordMysqlServerSeen: (identity: string) => recordMysqlServerSeen(redis, prefix, identity),
    /** The dashboard's sessions. */
    createAdminSession: (adminToken: string, lifetime: AdminSessionLifetime, now?: number) => createAdminSession(redis, prefix, adminToken, lifetime, now),
    readAdminSession: (id: string, adminToken: string, touch?: { idleMs: number }, now?: number) => readAdminSession(redis, prefix, id, adminToken, touch, now),
    deleteAdminSession: (id: string) => deleteAdminSession(redis, prefix, id),
    /** The order writers' reads of several sales' streams at once (reservation-stream.ts). */
    readNewEntries: (consumer: string, saleIds: number[], count: number) => readNewEntries(redis, prefix, consumer, saleIds, count),
    claimIdleEntriesOf: (consumer: string, saleIds: number[], minIdleMs: number, count: number) => claimIdleEntriesOf(redis, prefix, consumer, saleIds, minIdleMs, count),
    keepHeld: (consumer: string, saleId: number, ids: string[]) => keepHeld(redis, prefix, consumer, saleId, ids),
    /** The gateway's signal to the workers that a sale has new reservations (work-signal.ts). */
    workSignaller: (everyMs?: number) => new WorkSignaller(redis, prefix, everyMs),
    /** The memory of every Redis server (a cluster's masters each) against its limit. */
    memory: () => readRedisMemory(redis),
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
    isQueued: () => isQueued(redis, prefix, saleId),
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
    waitForDrain: (timeoutMs?: number, pollMs?: number) => waitForDrain(redis, prefix, saleId, timeoutMs, pollMs),
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
    /** The buyers' records, or null past `max` of them (the verdict cache holds small sales only). */
    buyers: (max: number) => readBuyers(redis, prefix, saleId, max),
    allBuyers: () => readAllBuyers(redis, prefix, saleId),
    writersProgress: () => orderWritersProgress(redis, prefix, saleId),
    deadLettered: (upTo: { generation: string; upTo: string | null }) => readDeadLettered(redis, prefix, saleId, upTo),
    recentDeadLettersByReason: (count?: number) => recentDeadLettersByReason(redis, prefix, saleId, count),
    ledger: () => readRedisLedger(redis, prefix, saleId),
    writeAuditRecord: (record: AuditRecord) => writeAuditRecord(redis, prefix, saleId, record),
    trimAcknowledged: (bounds: RetentionBounds) => trimAcknowledged(redis, prefix, saleId, bounds),
    /** Takes the sale out of the workers' list (it ended and drained). */
    retire: () => retireSale(redis, prefix, saleId),
    /** The door (door.ts): join, admit, a buyer's place, showing up, its gauges. */
    joinQueue: (userId: string, draw?: number, provenScore?: number, solution?: JoinSolution) => joinQueue(redis, prefix, saleId, userId, draw, provenScore, solution),
    admitQueue: (change?: { admitPerSecond?: number; paused?: boolean }) => admitQueue(redis, prefix, saleId, change),
    queuePlace: (userId: string) => readQueuePlace(redis, prefix, saleId, userId),
    showUp: (userId: string) => showUp(redis, prefix, saleId, userId),
    doorGauges: (at?: number) => readDoorGauges(redis, prefix, saleId, at),
    /** A buyer's closed orders as the rebuy rule counts them (buyer-history.ts). */
    closedOrders: (userId: string) => readClosedOrders(redis, prefix, saleId, userId),
  };
}

/** The bound purchase, its two shapes kept (with a replica wait it may answer `unreplicated`). */
function reserveIn(redis: ScriptedRedis, prefix: string) {
  function reserve(request: PurchaseRequest): Promise<ReserveOutcome>;
  function reserve(request: PurchaseRequest, wait: ReplicaWait | undefined): Promise<ReserveOutcome | UnreplicatedOutcome>;
  function reserve(request: PurchaseRequest, wait?: ReplicaWait): Promise<ReserveOutcome | UnreplicatedOutcome> {
    return reservePurchase(redis, prefix, request, wait);
  }
  return reserve;
}
