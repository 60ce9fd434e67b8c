/**
 * A sale's rebuy rule: what keeps one buyer from holding units without paying by cancelling (or letting
 * an order expire) and buying again at once, over and over. A buyer still holds at most one live order;
 * the rule bounds the orders they open one after another. Enforced by the reserve script
 * (redis-store lua/includes/buyer-history.lua), which counts each closed order as its units come back.
 */
export interface RebuyRule {
  /** The most orders one buyer may open in the sale, live, cancelled and expired together. */
  maxOrdersPerBuyer: number;
  /**
   * Seconds a buyer waits to buy again after their second closed order, doubled after each later one.
   * The first rebuy after a close is immediate (a buyer who cancelled by mistake buys again at once);
   * 0: no wait.
   */
  rebuyCooldownSeconds: number;
}

/**
 * The built-in rule (MAX_ORDERS_PER_BUYER, REBUY_COOLDOWN_SECONDS override it per deployment): three
 * orders, so a buyer may change their mind twice; the wait after the second close lets the units go to
 * someone else, a buyer polling at even one request a second getting them long before it ends.
 */
export const REBUY_RULE_DEFAULTS = { maxOrdersPerBuyer: 3, rebuyCooldownSeconds: 30 } as const satisfies RebuyRule;

/** Bounds of each setting, enforced by the configuration and the admin API. */
export const REBUY_RULE_LIMITS = {
  maxOrdersPerBuyer: { min: 1, max: 1000 },
  rebuyCooldownSeconds: { min: 0, max: 86_400 },
} as const;
