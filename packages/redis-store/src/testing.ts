// What tests need of the store and nothing else does: test code imports it from '@flashsale/redis-store/testing'.
export { salesIndexKey, ORDER_WRITERS_GROUP } from './keys.ts';
export { toReserveOutcome } from './reserve-purchase.ts';
export { setSalePaused } from './sale-state.ts';
export { parseBuyerRecord } from './buyer-record.ts';
export { recordPaymentArrival, heldPayments } from './payment-arrivals.ts';
export { rebuildSaleState } from './sale-rebuild.ts';
export { readClosedOrders } from './buyer-history.ts';
export { returnUnits } from './stock-return.ts';
export { acknowledge } from './reservation-stream.ts';
export { deadLetter } from './dead-letters.ts';
