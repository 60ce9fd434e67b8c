import type { ScriptedRedis } from './scripts.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';

/** How much of a sale's stream has not become orders yet. */
export interface StreamBacklog {
  /** Entries not yet delivered to any worker. */
  lag: number;
  /** Entries delivered but not acknowledged (a worker holds them, or died holding them). */
  pending: number;
  /** Entries given up on, kept in the dead-letter stream. */
  deadLettered: number;
}

/** The order writers' group on a sale's stream, as XINFO GROUPS tells it. */
export interface OrderWritersGroup {
  /** Entries not delivered yet; null when Redis cannot count them (entries deleted in the range). */
  lag: number | null;
  pending: number;
  lastDeliveredId: string;
}

/** The order writers' group in an XINFO GROUPS reply, or undefined when the stream has no such group. */
export function orderWritersGroupOf(reply: unknown): OrderWritersGroup | undefined {
  const group = (reply as unknown[][]).map(toRecord).find((g) => g.name === ORDER_WRITERS_GROUP);
  if (!group) return undefined;
  return {
    lag: group.lag === null || group.lag === undefined ? null : Number(group.lag),
    pending: Number(group.pending),
    lastDeliveredId: String(group['last-delivered-id']),
  };
}

/**
 * Reads the order writers' group with XINFO GROUPS (Redis 7: `lag` and `pending` per group; both 0 means
 * drained). A missing stream or group counts as nothing in flight: there is nothing left to deliver.
 */
export async function streamBacklog(redis: ScriptedRedis, prefix: string, saleId: number): Promise<StreamBacklog> {
  const keys = saleKeys(prefix, saleId);
  const [groupsReply, deadLettered] = await Promise.all([
    redis.xinfo('GROUPS', keys.stream).catch((error: Error) => {
      if (/no such key/i.test(error.message)) return [];
      throw error;
    }),
    redis.xlen(keys.deadLetter),
  ]);
  const group = orderWritersGroupOf(groupsReply);
  if (!group) return { lag: 0, pending: 0, deadLettered };
  // Redis leaves lag null when it cannot count it (entries deleted in the range); fall back to counting
  // the entries after the last delivered id.
  const lag = group.lag ?? (await redis.xrange(keys.stream, `(${group.lastDeliveredId}`, '+')).length;
  return { lag, pending: group.pending, deadLettered };
}

/** A flat [field, value, ...] reply (XINFO) as an object. */
function toRecord(flat: unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[String(flat[i])] = flat[i + 1];
  return record;
}
