// The store's one way in for the application layer: `createSaleStore(redis, prefix)`, which binds the
// client and the key prefix once (sale-store.ts). The record modules' own functions, which take
// a bound store or sale first (store-ref.ts), are not exported: what only tests use is in './testing'.
export { saleKeys, workSignalChannel, saleEventsChannel, type SaleKeys } from './keys.ts';
export { createSaleStore, type SaleStore, type SaleRedis } from './sale-store.ts';
export { type AdminSession, type AdminSessionLifetime } from './admin-session.ts';
export { type ScriptedRedis, type ScriptCommands, type ReserveReply, type ReserveArgs } from './scripts.ts';
export { createRedis, isRedisUnavailable } from './redis-client.ts';
export {
  reserveCodeOf,
  reserveArgs,
  type ReserveKeyCount,
  type ReserveOutcome,
  type UnreplicatedOutcome,
  type PurchaseRequest,
  type ReplicaWait,
} from './reserve-purchase.ts';
export { redisNow, type SaleState } from './sale-meta.ts';
export { decodeReservation, type StreamEntry, type ReservationEntry, type ReadRound, type ClaimRound } from './reservation-stream.ts';
export { isDrained } from './stream-drain.ts';
export { type StreamBacklog, type OrderWritersProgress } from './stream-backlog.ts';
export { acceptedUnits, type SaleSnapshot } from './sale-snapshot.ts';
export { type WorkSignaller, listenForWork } from './work-signal.ts';
export { connectRedis, redisTargetOf, isClusterClient, type RedisTarget, type RedisTargetLike } from './redis-target.ts';
export { pipelineBySlotGroup } from './slot-groups.ts';
export { type RetentionBounds } from './stream-retention.ts';
export { refuseEvictingRedis, memoryLimitOf, type RedisMemory, type MemoryLimit } from './redis-memory.ts';
export { type ShowUpOutcome, type JoinOutcome, type DoorReading, type DoorGauges } from './door.ts';
