export { saleKeys, workSignalChannel, saleEventsChannel, type SaleKeys } from './keys.ts';
export { lastSeenMysqlServer, recordMysqlServerSeen } from './mysql-server-record.ts';
export { createAdminSession, readAdminSession, deleteAdminSession, type AdminSession } from './admin-session.ts';
export { type ScriptedRedis, type ScriptCommands } from './scripts.ts';
export { createRedis, isRedisUnavailable } from './redis-client.ts';
export { reservePurchase, type ReserveOutcome, type UnreplicatedOutcome } from './reserve-purchase.ts';
export { publishSale, listSaleIds, retireSale, keepListed } from './sale-state.ts';
export { readSaleState, redisNow, type SaleState } from './sale-meta.ts';
export { readBuyers, readAllBuyers } from './buyer-record.ts';
export {
  decodeReservation,
  readNewEntries,
  claimIdleEntriesOf,
  keepHeld,
  type StreamEntry,
  type ReservationEntry,
} from './reservation-stream.ts';
export { streamBacklog, orderWritersProgress } from './stream-backlog.ts';
export { isDrained, waitForDrain } from './stream-drain.ts';
export { readDeadLettered, recentDeadLettersByReason } from './dead-letters.ts';
export { readRedisLedger } from './redis-ledger.ts';
export { writeAuditRecord, readAuditRecord } from './audit-record.ts';
export { restoreClosedOrders } from './buyer-history.ts';
export { snapshotSale, acceptedUnits, type SaleSnapshot } from './sale-snapshot.ts';
export { createSaleStore, type SaleRedis } from './sale-store.ts';
export { announceSaleChanged } from './sale-events.ts';
export { WorkSignaller, listenForWork } from './work-signal.ts';
export { connectRedis, redisTargetOf, isClusterClient, type RedisTarget, type RedisTargetLike } from './redis-target.ts';
export { pipelineBySlotGroup } from './slot-groups.ts';
export { trimAcknowledged, type RetentionBounds } from './stream-retention.ts';
export { refuseEvictingRedis, readRedisMemory, readMemoryLimit, memoryLimitOf, type RedisMemory, type MemoryLimit } from './redis-memory.ts';
export {
  joinQueue,
  admitQueue,
  readQueuePlace,
  showUp,
  type ShowUpOutcome,
  readDoorGauges,
  recordPaid,
  type JoinOutcome,
  type DoorReading,
  type DoorGauges,
} from './door.ts';
