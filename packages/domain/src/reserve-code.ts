/**
 * What the reserve script answered (reserve.lua, whose header says what comes with each): the first
 * element of a refusal's pair, and Reserved for its bare integer; one TypeScript name for every number
 * the script answers, as BullMQ's error-code.ts does.
 */
export enum ReserveCode {
  /** Answered as a bare integer, the remaining units, rather than a pair: the hot path's reply. */
  Reserved = 1,
  SaleNotFound = -1,
  SaleEnded = -2,
  SalePaused = -3,
  SaleNotStarted = -4,
  AboveLimit = -5,
  AlreadyPurchased = -6,
  SoldOut = -7,
  InsufficientStock = -8,
  /** The sale is behind the door and this buyer holds no running turn (reserve.lua). */
  NotAdmitted = -9,
  /** The sale's rebuy rule makes this buyer wait after their closed orders (reserve.lua). */
  RebuyCooldown = -10,
  /** This buyer has opened as many orders in the sale as its rebuy rule allows (reserve.lua). */
  OrderLimitReached = -11,
  /** The call was given fewer keys than the sale's terms need (reserve.lua); the caller makes it again with them, never a buyer's answer. */
  NeedsKeys = -12,
}
