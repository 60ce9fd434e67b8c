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
  const group = (groupsReply as unknown[][]).map(toRecord).find((g) => g.name === ORDER_WRITERS_GROUP);
  if (!group) return { lag: 0, pending: 0, deadLettered };
  let lag = group.lag === null || group.lag === undefined ? null : Number(group.lag);
  if (lag === null) {
    // Redis leaves lag null when it cannot count it (entries deleted in the range); fall back to
    // counting the entries after the last delivered id.
    lag = (await redis.xrange(keys.stream, `(${String(group['last-delivered-id'])}`, '+')).length;
  }
  return { lag, pending: Number(group.pending), deadLettered };
}

/** A flat [field, value, ...] reply (XINFO) as an object. */
export function toRecord(flat: unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[String(flat[i])] = flat[i + 1];
  return record;
}
