/**
 * The first element of the reserve script's reply (reserve-3.lua, whose header says what comes with
 * each): one TypeScript name for every number the script answers, as BullMQ's error-code.ts does.
 */
export enum ReserveCode {
  Reserved = 1,
  SaleNotFound = -1,
  SaleEnded = -2,
  SalePaused = -3,
  SaleNotStarted = -4,
  AboveLimit = -5,
  AlreadyPurchased = -6,
  SoldOut = -7,
  InsufficientStock = -8,
}
