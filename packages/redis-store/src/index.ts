export { saleKeys, salesIndexKey, ORDER_WRITERS_GROUP, type SaleKeys } from './keys.ts';
export { withScripts, type ScriptedRedis, type ScriptCommands } from './scripts.ts';
export { createRedis, type RedisClientOptions } from './redis-client.ts';
export { reservePurchase, toReserveOutcome, type ReserveOutcome, type PurchaseRequest } from './reserve-purchase.ts';
export { publishSale, readSaleState, setSalePaused, findBuyerReservation, listSaleIds, type SaleState } from './sale-state.ts';
export { streamBacklog, type StreamBacklog } from './stream-backlog.ts';
export { decodeReservation, type Reservation, type DecodedEntry } from './reservation-stream.ts';
