import type { DeadLetterReason, RebuyRule, SaleControlState, SaleDefinition } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import { saleKeys, type SaleKeys } from './keys.ts';
import { publishSale, setSalePaused, withdrawSale } from './sale-state.ts';
import { isQueued, readGeneration, readSaleState, redisNow } from './sale-meta.ts';
import { keepListed, listSaleIds, retireSale } from './sale-state.ts';
import { lastSeenMysqlServer, recordMysqlServerSeen } from './mysql-server-record.ts';
import { createAdminSession, deleteAdminSession, readAdminSession, type AdminSessionLifetime } from './admin-session.ts';
import {
  reservePurchase,
  type PurchaseRequest,
  type ReplicaWait,
  type ReserveOutcome,
  type UnreplicatedOutcome,
} from './reserve-purchase.ts';
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
import { deleteKeysWithPrefix } from './prefix-keys.ts';

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
    sale: (saleId: number) => new SaleRecords(redis, prefix, saleId),
    /**
     * The whole purchase decision, one script (reserve-6.lua); with `wait`, the replicas it needs. Bound
     * here rather than per sale: the purchase path builds no object of a sale's records per request.
     */
    reserve: reserveIn(redis, prefix),
    /** Makes a sale live (publish-sale-2.lua); the sale names its own id. */
    publish: (sale: SaleDefinition, generation: string, options?: { notAfter?: number }) =>
      publishSale(redis, prefix, sale, generation, options),
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
    createAdminSession: (adminToken: string, lifetime: AdminSessionLifetime, now?: number) =>
      createAdminSession(redis, prefix, adminToken, lifetime, now),
    readAdminSession: (id: string, adminToken: string, touch?: { idleMs: number }, now?: number) =>
      readAdminSession(redis, prefix, id, adminToken, touch, now),
    deleteAdminSession: (id: string) => deleteAdminSession(redis, prefix, id),
    /** The order writers' reads of several sales' streams at once (reservation-stream.ts). */
    readNewEntries: (consumer: string, saleIds: number[], count: number) => readNewEntries(redis, prefix, consumer, saleIds, count),
    claimIdleEntriesOf: (consumer: string, saleIds: number[], minIdleMs: number, count: number) =>
      claimIdleEntriesOf(redis, prefix, consumer, saleIds, minIdleMs, count),
    keepHeld: (consumer: string, saleId: number, ids: string[]) => keepHeld(redis, prefix, consumer, saleId, ids),
    /** The gateway's signal to the workers that a sale has new reservations (work-signal.ts). */
    workSignaller: (everyMs?: number) => new WorkSignaller(redis, prefix, everyMs),
    /** The memory of every Redis server (a cluster's masters each) against its limit. */
    memory: () => readRedisMemory(redis),
    /** Deletes every key under the prefix (prefix-keys.ts): what a test, the demo or a load run leaves behind. */
    deleteAllKeys: () => deleteKeysWithPrefix(redis, prefix),
  };
}

export type SaleStore = ReturnType<typeof createSaleStore>;
export type SaleRedis = SaleRecords;

/**
 * One sale's records, bound to the store's client and prefix: a small object whose methods live on the
 * class (binding costs one allocation and the sale's key names, not a closure per record), made afresh
 * for each call of `sale(id)`.
 */
export class SaleRecords {
  readonly keys: SaleKeys;

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
    readonly saleId: number,
  ) {
    this.keys = saleKeys(prefix, saleId);
  }
  /** Redis's clock on the master of the sale's slot (a cluster's masters' clocks differ). */
  now() {
    return redisNow(this.redis, this.keys.meta);
  }
  state() {
    return readSaleState(this.redis, this.prefix, this.saleId);
  }
  generation() {
    return readGeneration(this.redis, this.prefix, this.saleId);
  }
  isQueued() {
    return isQueued(this.redis, this.prefix, this.saleId);
  }
  snapshot() {
    return snapshotSale(this.redis, this.prefix, this.saleId);
  }
  /** The memory of the sale's Redis server against its limit: over it, every purchase is refused (OOM). */
  memoryLimit() {
    return readMemoryLimit(this.redis, this.prefix, this.saleId);
  }
  publish(sale: SaleDefinition, generation: string, options: { notAfter?: number }) {
    return publishSale(this.redis, this.prefix, { ...sale, id: this.saleId }, generation, options);
  }
  withdraw(generation: string) {
    return withdrawSale(this.redis, this.prefix, this.saleId, generation);
  }
  /** False when the sale is not in Redis, or holds another generation than `generation` (when given). */
  setPaused(paused: boolean, generation?: string) {
    return setSalePaused(this.redis, this.prefix, this.saleId, paused, generation);
  }
  applyControls(controls: SaleControlState) {
    return applySaleControls(this.redis, this.prefix, this.saleId, controls);
  }
  /** Tells every gateway the sale changed, so none answers from a cached verdict. */
  announceChanged() {
    return announceSaleChanged(this.redis, this.prefix, this.saleId);
  }
  backlog() {
    return streamBacklog(this.redis, this.prefix, this.saleId);
  }
  waitForDrain(timeoutMs?: number, pollMs?: number) {
    return waitForDrain(this.redis, this.prefix, this.saleId, timeoutMs, pollMs);
  }
  hasEntry(entryId: string) {
    return streamHasEntry(this.redis, this.prefix, this.saleId, entryId);
  }
  /** Acknowledges entries the order writers are done with (written, or found written already). */
  acknowledge(entryIds: string[]) {
    return acknowledge(this.redis, this.prefix, this.saleId, entryIds);
  }
  /** Sets an entry aside, with its reason, in one step with its acknowledgement (dead-letter-4.lua). */
  deadLetter(entry: StreamEntry, reason: DeadLetterReason, deliveries: number) {
    return deadLetter(this.redis, this.prefix, this.saleId, entry, reason, deliveries);
  }
  auditRecord() {
    return readAuditRecord(this.redis, this.prefix, this.saleId);
  }
  deadLetterOf(reservationId: string) {
    return findDeadLetter(this.redis, this.prefix, this.saleId, reservationId);
  }
  reservationOf(userId: string) {
    return findBuyerReservation(this.redis, this.prefix, this.saleId, userId);
  }
  heldReservationPages(pageSize: number) {
    return heldReservationPages(this.redis, this.prefix, this.saleId, pageSize);
  }
  areSetAside(reservationIds: readonly string[]) {
    return areSetAside(this.redis, this.prefix, this.saleId, reservationIds);
  }
  recordPaymentArrival(event: Omit<PaymentContents, 'saleId'>) {
    return recordPaymentArrival(this.redis, this.prefix, { ...event, saleId: this.saleId });
  }
  heldPayments() {
    return heldPayments(this.redis, this.prefix, this.saleId);
  }
  forgetPaymentArrivals(eventIds: string[]) {
    return forgetPaymentArrivals(this.redis, this.prefix, this.saleId, eventIds);
  }
  returnUnits(generation: string, orders: UnitsToReturn[]) {
    return returnUnits(this.redis, this.prefix, this.saleId, generation, orders);
  }
  returnedReservationPages(pageSize: number) {
    return returnedReservationPages(this.redis, this.prefix, this.saleId, pageSize);
  }
  rebuild(
    sale: SaleDefinition & { operatorPaused: boolean; controlsVersion: number },
    rebuilt: { remaining: number; generation: string; buyers: BuyerPages },
  ) {
    return rebuildSaleState(this.redis, this.prefix, { ...sale, id: this.saleId }, rebuilt);
  }
  restoreClosedOrders(rule: RebuyRule, buyers: BuyerClosedOrders[]) {
    return restoreClosedOrders(this.redis, this.prefix, this.saleId, rule, buyers);
  }
  /** Tells the sale's door that a paid order's units can never come back. */
  recordPaid(reservationId: string, units: number) {
    return recordPaid(this.redis, this.prefix, this.saleId, reservationId, units);
  }
  /** The buyers' records, or null past `max` of them (the verdict cache holds small sales only). */
  buyers(max: number) {
    return readBuyers(this.redis, this.prefix, this.saleId, max);
  }
  allBuyers() {
    return readAllBuyers(this.redis, this.prefix, this.saleId);
  }
  writersProgress() {
    return orderWritersProgress(this.redis, this.prefix, this.saleId);
  }
  deadLettered(upTo: { generation: string; upTo: string | null }) {
    return readDeadLettered(this.redis, this.prefix, this.saleId, upTo);
  }
  recentDeadLettersByReason(count?: number) {
    return recentDeadLettersByReason(this.redis, this.prefix, this.saleId, count);
  }
  ledger() {
    return readRedisLedger(this.redis, this.prefix, this.saleId);
  }
  writeAuditRecord(record: AuditRecord) {
    return writeAuditRecord(this.redis, this.prefix, this.saleId, record);
  }
  trimAcknowledged(bounds: RetentionBounds) {
    return trimAcknowledged(this.redis, this.prefix, this.saleId, bounds);
  }
  /** Takes the sale out of the workers' list (it ended and drained). */
  retire() {
    return retireSale(this.redis, this.prefix, this.saleId);
  }
  /** The door (door.ts): join, admit, a buyer's place, showing up, its gauges. */
  joinQueue(userId: string, draw?: number, provenScore?: number, solution?: JoinSolution) {
    return joinQueue(this.redis, this.prefix, this.saleId, userId, draw, provenScore, solution);
  }
  admitQueue(change?: { admitPerSecond?: number; paused?: boolean }) {
    return admitQueue(this.redis, this.prefix, this.saleId, change);
  }
  queuePlace(userId: string) {
    return readQueuePlace(this.redis, this.prefix, this.saleId, userId);
  }
  showUp(userId: string) {
    return showUp(this.redis, this.prefix, this.saleId, userId);
  }
  doorGauges(at?: number) {
    return readDoorGauges(this.redis, this.prefix, this.saleId, at);
  }
  /** A buyer's closed orders as the rebuy rule counts them (buyer-history.ts). */
  closedOrders(userId: string) {
    return readClosedOrders(this.redis, this.prefix, this.saleId, userId);
  }
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
