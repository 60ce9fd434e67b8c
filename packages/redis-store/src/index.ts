export { saleKeys, salesIndexKey, workSignalChannel, saleEventsChannel, mysqlServerKey, ORDER_WRITERS_GROUP, type SaleKeys } from './keys.ts';
export { createAdminSession, readAdminSession, deleteAdminSession, type AdminSession, type AdminSessionLifetime } from './admin-session.ts';
export { withScripts, type ScriptedRedis, type ScriptCommands } from './scripts.ts';
export { createRedis, isRedisUnavailable, type RedisClientOptions } from './redis-client.ts';
export { reservePurchase, toReserveOutcome, type ReserveOutcome, type UnreplicatedOutcome, type ReplicaWait, type PurchaseRequest } from './reserve-purchase.ts';
export { publishSale, withdrawSale, setSalePaused, listSaleIds, retireSale, keepListed } from './sale-state.ts';
export { readSaleState, redisNow, admissionArgs, type SaleState } from './sale-meta.ts';
export { findBuyerReservation, parseBuyerRecord, reservedAtOfBuyerRecord, readBuyers, readAllBuyers, BUYERS_PER_CALL, type BuyerPages, type BuyerRecord, type BuyerReservation } from './buyer-record.ts';
export {
  decodeReservation,
  readNewEntries,
  claimIdleEntries,
  claimIdleEntriesOf,
  type ClaimRound,
  keepHeld,
  acknowledge,
  streamHasEntry,
  type StreamEntry,
  type ReservationEntry,
  type DecodedEntry,
  type ReadRound,
} from './reservation-stream.ts';
export { streamBacklog, orderWritersProgress, type StreamBacklog, type OrderWritersProgress } from './stream-backlog.ts';
export {
  recordPaymentArrival,
  heldPayments,
  forgetPaymentArrivals,
  type PaymentArrival,
  type PaymentContents,
  type HeldPayment,
} from './payment-arrivals.ts';
export { isDrained, waitForDrain } from './stream-drain.ts';
export { deadLetter, findDeadLetter, readDeadLettered, recentDeadLettersByReason, type DeadLetteredReservation } from './dead-letters.ts';
export { readRedisLedger, type RedisLedger } from './redis-ledger.ts';
export { writeAuditRecord, readAuditRecord, type AuditRecord } from './audit-report.ts';
export { rebuildSaleState } from './sale-rebuild.ts';
export { restoreClosedOrders, readClosedOrders, rebuyRuleArgs, type BuyerClosedOrders } from './buyer-history.ts';
export { applySaleControls, type ControlsApplied } from './sale-controls.ts';
export { snapshotSale, acceptedUnits, type SaleSnapshot } from './sale-snapshot.ts';
export { announceSaleChanged } from './sale-events.ts';
export { WorkSignaller, listenForWork } from './work-signal.ts';
export { connectRedis, redisTargetOf, isClusterClient, type RedisTarget, type RedisTargetLike } from './redis-target.ts';
export { pipelineBySlotGroup, type PipelineReply } from './slot-groups.ts';
export { trimAcknowledged, type RetentionBounds } from './stream-retention.ts';
export { returnUnits, wasReturned, type UnitsToReturn, type ReturnOutcome, type ReturnResult } from './stock-return.ts';
export { readEvictionPolicy, refuseEvictingRedis, readRedisMemory, type EvictionPolicyVerdict, type RedisMemory } from './redis-memory.ts';
export { joinQueue, admitQueue, readQueuePlace, readDoorGauges, recordPaid, newDraw, type JoinOutcome, type DoorReading, type PlaceReading, type DoorGauges } from './door.ts';
