// What tests need of the store and nothing else does: test code imports it from '@flashsale/redis-store/testing'.
export { salesIndexKey, ORDER_WRITERS_GROUP } from './keys.ts';
export { toReserveOutcome } from './reserve-purchase.ts';
export { parseBuyerRecord } from './buyer-record.ts';
