// What tests need of the store and nothing else does: test code imports it from '@flashsale/order-store/testing'.
export { migrationNames } from './migrator.ts';
export { recordLostReservations } from './lost-reservations.ts';
