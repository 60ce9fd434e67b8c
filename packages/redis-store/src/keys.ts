/**
 * Every Redis key and pub/sub channel the system names, in one place; BullMQ names its own keys, under
 * `bullPrefix` (packages/jobs). All keys of one sale share the hash tag `{s<id>}`, so each script
 * touches a single slot and runs unchanged on Redis Cluster; `prefix` (REDIS_PREFIX) keeps deployments
 * and test runs sharing one Redis apart.
 */
export interface SaleKeys {
  /**
   * Hash: the sale's record (definition, remaining, both pauses, generation, controls version, returns,
   * door terms, rebuy rule); its fields are listed once, in lua/includes/sale-meta.lua.
   */
  meta: string;
  /** Hash: user id -> "<reservationId>|<quantity>". */
  buyers: string;
  /**
   * Hash: the buyers a rebuild is writing from MySQL, in chunks (sale-rebuild.ts), renamed over `buyers`
   * by rebuild-sale-6.lua once whole. It expires while being written: a rebuild that dies leaves nothing
   * behind for long, and the next attempt starts it anew.
   */
  nextBuyers: string;
  /** Stream of reservations waiting to become orders. */
  stream: string;
  /** Stream of entries the workers gave up on, with their reason. */
  deadLetter: string;
  /**
   * Hash: reservation id -> JSON `{"u": user id, "q": quantity, "reason": code}` of each reservation the
   * workers set aside, written in the same script as its dead-letter entry (dead-letter-4.lua), and
   * `units:<generation>` -> the units of that generation's reservations set aside, each reservation
   * once. A status lookup reads one with HGET, the audit the other; scanning the dead-letter stream
   * would cost work growing with it. Like that stream, neither a rebuild nor a withdrawal touches it.
   */
  rejected: string;
  /** Hash: the last audit's report (drift, checkedAt, ...). Written by the audit only. */
  audit: string;
  /**
   * Hash: reservation id -> '1' for each closed order (cancelled, expired) whose units return-units-4.lua
   * gave back in this generation: a second return of the same order gives nothing. Emptied by a rebuild.
   */
  returned: string;
  /**
   * Hash: user id -> "<closedOrders>|<lastClosedAtMs>": the buyer's orders of this sale that were cancelled
   * or expired, counted by return-units-4.lua as their units come back; what the sale's rebuy rule judges
   * a buyer's next order by (lua/includes/buyer-history.lua). A rebuild merges MySQL's counts in.
   */
  closed: string;
  /**
   * Hash: payment event id -> "<reservationId>|<amountCents>|<receivedAtMs>" of each payment event that
   * reached the gateway and is not in MySQL yet (receive-payment-1.lua): its arrival on Redis's clock.
   * An entry goes once MySQL holds the payment; the hash is empty but while MySQL is slow or away.
   */
  payments: string;
  /**
   * The door of a sale behind a waiting room (door.ts; lua/includes/door.lua says what each holds):
   * `queue` sorted set user -> draw or arrival score, `turns` sorted set user -> admittedUntil (minus it
   * once used, 0 once abandoned), `door` hash of the frontier's progress, `paid` hash of paid reservations,
   * `pow` sorted set of the challenge solutions joins used (until they expire), `showUp` sorted set user ->
   * the full end of each running turn whose buyer has not shown up yet. None exists for an open sale.
   */
  queue: string;
  turns: string;
  door: string;
  paid: string;
  pow: string;
  showUp: string;
}

/** Every key of a sale, by the name SaleKeys gives it. */
const SALE_KEY_NAMES = [
  'meta',
  'buyers',
  'nextBuyers',
  'stream',
  'deadLetter',
  'rejected',
  'audit',
  'returned',
  'closed',
  'payments',
  'queue',
  'turns',
  'door',
  'paid',
  'pow',
  'showUp',
] as const satisfies readonly (keyof SaleKeys)[];
// Every key of SaleKeys is in the list: a key added to the interface and not here fails to compile.
const everyKeyNamed: Exclude<keyof SaleKeys, (typeof SALE_KEY_NAMES)[number]> extends never ? true : never = true;
void everyKeyNamed;

/** A key's suffix after the sale's tag is its name, but for these. */
const SUFFIX: Partial<Record<keyof SaleKeys, string>> = { nextBuyers: 'buyers-next', deadLetter: 'dead', showUp: 'show-up' };

/** The keys last asked for: a crowd buys from one sale, and each purchase asks for its keys. */
let last: { prefix: string; saleId: number; keys: SaleKeys } | undefined;

export function saleKeys(prefix: string, saleId: number): SaleKeys {
  if (last?.saleId === saleId && last.prefix === prefix) return last.keys;
  const base = `${prefix}:{s${saleId}}`;
  const keys = {} as Record<keyof SaleKeys, string>;
  for (const name of SALE_KEY_NAMES) keys[name] = `${base}:${SUFFIX[name] ?? name}`;
  last = { prefix, saleId, keys: Object.freeze(keys) };
  return keys;
}

/** Set of the ids of every published sale: the workers consume the stream of each. */
export function salesIndexKey(prefix: string): string {
  return `${prefix}:sales`;
}

/**
 * String: the identity of the MySQL server the reconciler last saw (mysqlServerIdentity). Kept in Redis,
 * the store that survives MySQL's going back, so a reconciler started after the failover still knows.
 */
export function mysqlServerKey(prefix: string): string {
  return `${prefix}:mysql-server`;
}

/**
 * String: one operator's dashboard session (admin-session.ts), named by the SHA-256 of the session id the
 * cookie holds (whoever reads Redis cannot sign in with what is stored), expiring with the session.
 */
export function adminSessionKey(prefix: string, sessionIdHash: string): string {
  return `${prefix}:admin-session:${sessionIdHash}`;
}

/**
 * Pub/sub channel of the "work waiting" signal (work-signal.ts): a gateway publishes a sale's id when it
 * has enqueued a reservation of it, and the workers read that sale's stream at once.
 */
export function workSignalChannel(prefix: string): string {
  return `${prefix}:work`;
}

/**
 * Pub/sub channel on which a sale's state changes are announced (sale-events.ts): the message is the
 * sale's id, and gateways drop the verdict they cache about it.
 */
export function saleEventsChannel(prefix: string): string {
  return `${prefix}:sale-events`;
}

/** The consumer group of the order writers on every sale stream. */
export const ORDER_WRITERS_GROUP = 'order-writers';
