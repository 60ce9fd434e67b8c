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
  /** Entries the group has been given since it was made (Redis 7 `entries-read`); null when Redis cannot tell. */
  entriesRead: number | null;
}

/** The order writers' group in an XINFO GROUPS reply, or undefined when the stream has no such group. */
export function orderWritersGroupOf(reply: unknown): OrderWritersGroup | undefined {
  const group = (reply as unknown[][]).map(toRecord).find((g) => g.name === ORDER_WRITERS_GROUP);
  if (!group) return undefined;
  return {
    lag: group.lag === null || group.lag === undefined ? null : Number(group.lag),
    pending: Number(group.pending),
    lastDeliveredId: String(group['last-delivered-id']),
    entriesRead: group['entries-read'] === null || group['entries-read'] === undefined ? null : Number(group['entries-read']),
  };
}

/**
 * Reads the order writers' group with XINFO GROUPS (Redis 7: `lag` and `pending` per group; both 0 means
 * drained). A missing stream or group counts as nothing in flight: there is nothing left to deliver.
 */
export async function streamBacklog(redis: ScriptedRedis, prefix: string, saleId: number): Promise<StreamBacklog> {
  const { lag, pending, deadLettered } = await orderWritersProgress(redis, prefix, saleId);
  return { lag, pending, deadLettered };
}

/** A sale's backlog, and how far the order writers have come in all (the dashboard's history). */
export interface OrderWritersProgress extends StreamBacklog {
  /**
   * Entries delivered and acknowledged since the stream began (`entries-read` - pending): written as
   * orders, or dead-lettered. Only its differences mean anything (a rebuilt stream starts again from 0);
   * null when Redis cannot tell.
   */
  acknowledged: number | null;
}

/** streamBacklog, with the acknowledged count, from the same XINFO GROUPS reply. */
export async function orderWritersProgress(redis: ScriptedRedis, prefix: string, saleId: number): Promise<OrderWritersProgress> {
  const keys = saleKeys(prefix, saleId);
  const [groupsReply, deadLettered] = await Promise.all([
    redis.xinfo('GROUPS', keys.stream).catch((error: Error) => {
      if (/no such key/i.test(error.message)) return [];
      throw error;
    }),
    redis.xlen(keys.deadLetter),
  ]);
  const group = orderWritersGroupOf(groupsReply);
  // No stream or group yet: nothing was delivered, nothing acknowledged.
  if (!group) return { lag: 0, pending: 0, deadLettered, acknowledged: 0 };
  // Redis leaves lag null when it cannot count it (entries deleted in the range); fall back to counting
  // the entries after the last delivered id.
  const lag = group.lag ?? (await redis.xrange(keys.stream, `(${group.lastDeliveredId}`, '+')).length;
  // A group given nothing yet reports entries-read nil (Redis 7.0): nothing read is 0 read.
  const entriesRead = group.entriesRead ?? (group.lastDeliveredId === '0-0' ? 0 : null);
  return { lag, pending: group.pending, deadLettered, acknowledged: entriesRead === null ? null : entriesRead - group.pending };
}

/** A flat [field, value, ...] reply (XINFO) as an object. */
function toRecord(flat: unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[String(flat[i])] = flat[i + 1];
  return record;
}
