import type { Reservation } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';
import { redisTimeMs, SALE_COUNTER_FIELDS, saleCountersOf } from './sale-meta.ts';
import { lastEntryIdOf, readUnacknowledged } from './reservation-stream.ts';
import { orderWritersGroupOf } from './stream-backlog.ts';
import { deadLetteredReservationsOf } from './dead-letters.ts';

/** Redis's side of one sale's ledger at one instant: what it has left, and what is on its way or set aside. */
export interface RedisLedger {
  /** Redis time it was read at, epoch ms. */
  at: number;
  stock: number;
  remaining: number;
  generation: string;
  /** Units of each reservation of this generation not acknowledged yet (undelivered or pending), by reservation id. */
  inFlight: Map<string, number>;
  /** Units of each reservation of this generation set aside in the dead-letter stream, by reservation id. */
  deadLettered: Map<string, number>;
}

/**
 * Reads Redis's side of a sale's ledger, for the audit. The counters, the group's position, the stream's
 * last id and the dead letters are taken in one MULTI; the entries in flight are then read by id up to
 * that last id, so the reading counts exactly the reservations accepted by the time of the MULTI. Only
 * entries of the current generation count: others were never taken from this state's stock. Null when
 * there is nothing to audit: the sale is not in Redis, is paused, or its stream or group is missing (a
 * lost state, which is the watcher's business).
 */
export async function readRedisLedger(redis: ScriptedRedis, prefix: string, saleId: number): Promise<RedisLedger | null> {
  const keys = saleKeys(prefix, saleId);
  const replies = await redis
    .multi()
    .time()
    .hmget(keys.meta, ...SALE_COUNTER_FIELDS)
    .xrevrange(keys.stream, '+', '-', 'COUNT', 1)
    .xinfo('GROUPS', keys.stream)
    .xrange(keys.deadLetter, '-', '+')
    .exec();
  if (!replies) return null;
  // A missing stream fails XINFO.
  if (replies.some(([error]) => error)) return null;
  const [time, meta, last, groups, dead] = replies.map(([, reply]) => reply);
  const counters = saleCountersOf(meta);
  if (!counters || counters.paused) return null;
  const group = orderWritersGroupOf(groups);
  if (!group) return null;
  const inFlight = await readUnacknowledged(redis, prefix, saleId, { lastDeliveredId: group.lastDeliveredId, lastId: lastEntryIdOf(last) ?? '0-0' });
  const units = (reservations: Reservation[]) => {
    const byReservation = new Map<string, number>();
    for (const r of reservations) if (r.generation === counters.generation) byReservation.set(r.reservationId, r.quantity);
    return byReservation;
  };
  return {
    at: redisTimeMs(time),
    stock: counters.stock,
    remaining: counters.remaining,
    generation: counters.generation,
    inFlight: units(inFlight),
    deadLettered: units(deadLetteredReservationsOf(saleId, dead)),
  };
}
