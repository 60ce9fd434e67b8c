import type { Reservation } from '@flashsale/domain';
import type { SaleRef } from './store-ref.ts';
import { redisTimeMs, SALE_COUNTER_FIELDS, saleCountersOf } from './sale-meta.ts';
import { lastEntryIdOf, readUnacknowledged } from './reservation-stream.ts';
import { orderWritersGroupOf, undeliveredLag } from './stream-backlog.ts';
import { deadLetteredUnitsField } from './dead-letters.ts';

/** Redis's side of one sale's ledger at one instant: what it has left, and what is on its way or set aside. */
export interface RedisLedger {
  /** Redis time it was read at, epoch ms. */
  at: number;
  stock: number;
  remaining: number;
  generation: string;
  /** Units closed orders gave back to this generation (return-units-4.lua), read with remaining. */
  returnedUnits: number;
  /** Units of each reservation of this generation not acknowledged yet (undelivered or pending), by reservation id. */
  inFlight: Map<string, number>;
  /** Units of this generation's reservations set aside in the dead-letter stream, as dead-letter-4.lua counts them. */
  deadLetteredUnits: number;
  /** Id of the dead-letter stream's last entry at that instant (null: none), for readDeadLettered to read up to. */
  lastDeadLetterId: string | null;
}

/** Reads with a generation that a rebuild replaced in between, before giving up (a rebuild pauses the sale first). */
const ATTEMPTS = 3;

/**
 * The most entries in flight (undelivered plus pending) an audit reads. Past it the sale is not audited
 * this time (null, as for a sale with nothing to audit) and the next audit tries again: during a backlog
 * (workers behind a burst) reading every entry in flight, and sending their ids to MySQL, would make the
 * audit's memory and time grow with the backlog. A 10-minute soak at full speed saw 170,000 entries in
 * flight while the workers caught up, and the reconciler at 480 MiB reading them.
 */
export const AUDIT_MAX_IN_FLIGHT = 10_000;

/**
 * Reads Redis's side of a sale's ledger, for the audit. The counters, the group's position, the stream's
 * last id, the dead-lettered units and the dead-letter stream's last id are taken in one MULTI; the
 * entries in flight are then read by id up to that last id, so the reading counts exactly the
 * reservations accepted by the time of the MULTI. Only entries of the current generation count: others
 * were never taken from this state's stock. The cost follows what is in flight, never how many entries
 * the stream or the dead letters hold. Null when there is nothing to audit: the sale is not in Redis, is
 * paused, or its stream or group is missing (a lost state, which is the watcher's business); and when
 * more than AUDIT_MAX_IN_FLIGHT entries are in flight (audited once the workers have caught up).
 */
export async function readRedisLedger(sale: SaleRef): Promise<RedisLedger | null> {
  const { redis, keys } = sale;
  // The dead-lettered units are counted per generation, and which is the state's is known from its meta:
  // the MULTI reads the count of the generation read just before, and checks it is still the state's.
  let generation = await redis.hget(keys.meta, 'gen');
  for (let attempt = 0; generation !== null && attempt < ATTEMPTS; attempt++) {
    const replies = await redis
      .multi()
      .time()
      .hmget(keys.meta, ...SALE_COUNTER_FIELDS)
      .xrevrange(keys.stream, '+', '-', 'COUNT', 1)
      .xinfo('GROUPS', keys.stream)
      .hget(keys.rejected, deadLetteredUnitsField(generation))
      .xrevrange(keys.deadLetter, '+', '-', 'COUNT', 1)
      .exec();
    if (!replies) return null;
    // A missing stream fails XINFO.
    if (replies.some(([error]) => error)) return null;
    const [time, meta, last, groups, deadLetteredUnits, lastDeadLetter] = replies.map(([, reply]) => reply);
    const counters = saleCountersOf(meta);
    if (!counters || counters.paused) return null;
    if (counters.generation !== generation) {
      generation = counters.generation;
      continue;
    }
    const group = orderWritersGroupOf(groups);
    if (!group) return null;
    const lag = undeliveredLag(group, lastEntryIdOf(last));
    if (lag !== null && lag + group.pending > AUDIT_MAX_IN_FLIGHT) return null;
    const inFlight = await readUnacknowledged(sale, {
      lastDeliveredId: group.lastDeliveredId,
      lastId: lastEntryIdOf(last) ?? '0-0',
    });
    return {
      at: redisTimeMs(time),
      stock: counters.stock,
      remaining: counters.remaining,
      generation,
      returnedUnits: counters.returnedUnits,
      inFlight: unitsByReservation(inFlight, generation),
      deadLetteredUnits: Number(deadLetteredUnits ?? 0),
      lastDeadLetterId: lastEntryIdOf(lastDeadLetter),
    };
  }
  return null;
}

function unitsByReservation(reservations: Reservation[], generation: string): Map<string, number> {
  const byReservation = new Map<string, number>();
  for (const r of reservations) if (r.generation === generation) byReservation.set(r.reservationId, r.quantity);
  return byReservation;
}
