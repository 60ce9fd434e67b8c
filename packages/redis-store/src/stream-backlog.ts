import type { ScriptedRedis } from './scripts.ts';
import type { SaleRef } from './store-ref.ts';
import { ORDER_WRITERS_GROUP } from './keys.ts';
import { lastEntryIdOf } from './reservation-stream.ts';

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
  /** Entries not delivered yet as Redis counts them (entries added - entries read); null when it cannot. */
  lag: number | null;
  pending: number;
  lastDeliveredId: string;
  /** The group's `entries-read`; null when Redis does not know it. */
  entriesRead: number | null;
}

/** The order writers' group in an XINFO GROUPS reply, or undefined when the stream has no such group. */
export function orderWritersGroupOf(reply: unknown): OrderWritersGroup | undefined {
  const group = (reply as unknown[][]).map(toRecord).find((g) => g.name === ORDER_WRITERS_GROUP);
  if (!group) return undefined;
  const numberOrNull = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return {
    lag: numberOrNull(group.lag),
    pending: Number(group.pending),
    lastDeliveredId: String(group['last-delivered-id']),
    entriesRead: numberOrNull(group['entries-read']),
  };
}

/** Orders two stream ids (`<ms>-<seq>`) as Redis does: negative, 0 or positive. */
export function compareEntryIds(a: string, b: string): number {
  const [aMs = 0n, aSeq = 0n] = a.split('-').map(BigInt);
  const [bMs = 0n, bSeq = 0n] = b.split('-').map(BigInt);
  if (aMs !== bMs) return aMs < bMs ? -1 : 1;
  return aSeq === bSeq ? 0 : aSeq < bSeq ? -1 : 1;
}

/**
 * The entries a group has not delivered yet, judged from what the ids prove rather than from XINFO's
 * `lag` alone. A group delivers only entries after its `last-delivered-id` (XREADGROUP `>`), so when the
 * stream's last entry is not after it, nothing is undelivered: 0, whatever `lag` says. Redis computes
 * `lag` from `entries-read`, which a promoted replica was seen to carry over wrong (lag 222 with
 * last-delivered-id equal to the last id and nothing after it, Redis 7.0.15), and which XGROUP SETID
 * can set to anything. When entries do follow, a positive `lag` is taken (its size may be off; that it
 * is not 0 is proven), and a `lag` of 0 or unknown is not: null, for the caller to count the entries.
 * Never judges drained a stream that has an entry after the group's position.
 */
export function undeliveredLag(group: Pick<OrderWritersGroup, 'lag' | 'lastDeliveredId'>, lastEntryId: string | null): number | null {
  if (lastEntryId === null || compareEntryIds(lastEntryId, group.lastDeliveredId) <= 0) return 0;
  return group.lag !== null && group.lag > 0 ? group.lag : null;
}

/**
 * Reads the order writers' group of a sale's stream: in one pipeline (not a MULTI: out of memory, Redis
 * aborts the transaction, and the watch must read to free memory), XINFO GROUPS (the group's position),
 * the stream's last entry id and XPENDING's summary (the entries delivered and not acknowledged, from
 * the pending entries list itself). Undelivered entries are judged by undeliveredLag, and counted by
 * reading the stream after the group's position where XINFO's lag cannot be trusted (countEntriesAfter:
 * a page at a time, up to UNDELIVERED_COUNT_CAP). A missing stream or
 * group counts as nothing in flight: there is nothing left to deliver.
 */
export async function streamBacklog(sale: SaleRef): Promise<StreamBacklog> {
  const { lag, pending, deadLettered } = await orderWritersProgress(sale);
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
export async function orderWritersProgress({ redis, keys }: SaleRef): Promise<OrderWritersProgress> {
  const replies = await redis
    .pipeline()
    .xinfo('GROUPS', keys.stream)
    .xrevrange(keys.stream, '+', '-', 'COUNT', 1)
    .xpending(keys.stream, ORDER_WRITERS_GROUP)
    .xlen(keys.deadLetter)
    .exec();
  if (!replies) throw new Error('backlog transaction was discarded');
  const [[groupsError, groups], [lastError, last], [pendingError, pendingSummary], [deadError, deadLettered]] = replies as [
    [Error | null, unknown],
    [Error | null, unknown],
    [Error | null, unknown],
    [Error | null, unknown],
  ];
  for (const error of [lastError, deadError]) if (error) throw error;
  // A missing stream fails XINFO, a missing group XPENDING: nothing to deliver either way.
  if (groupsError) {
    // No stream or group yet: nothing was delivered, nothing acknowledged.
    if (/no such key/i.test(groupsError.message)) return { lag: 0, pending: 0, deadLettered: Number(deadLettered), acknowledged: 0 };
    throw groupsError;
  }
  const group = orderWritersGroupOf(groups);
  if (!group) return { lag: 0, pending: 0, deadLettered: Number(deadLettered), acknowledged: 0 };
  if (pendingError) throw pendingError;
  const lag = undeliveredLag(group, lastEntryIdOf(last)) ?? (await countEntriesAfter(redis, keys.stream, group.lastDeliveredId));
  const pending = Number((pendingSummary as [number])[0]);
  // A group given nothing yet reports entries-read nil (Redis 7.0): nothing read is 0 read.
  const entriesRead = group.entriesRead ?? (group.lastDeliveredId === '0-0' ? 0 : null);
  return { lag, pending, deadLettered: Number(deadLettered), acknowledged: entriesRead === null ? null : entriesRead - pending };
}

/** Entries read per XRANGE when undelivered entries are counted. */
const COUNT_PAGE = 1000;
/** The most undelivered entries counted one by one; past it the count stands for "at least this many". */
export const UNDELIVERED_COUNT_CAP = 100_000;

/**
 * The entries of `stream` after `afterId`, counted a page at a time (XRANGE with COUNT), up to `cap`:
 * a whole-stream XRANGE would hold Redis and this process for as long as a backlog of millions takes to
 * read and answer, when what the callers need is whether any is left and roughly how many.
 */
export async function countEntriesAfter(
  redis: ScriptedRedis,
  stream: string,
  afterId: string,
  cap = UNDELIVERED_COUNT_CAP,
): Promise<number> {
  let counted = 0;
  let from = afterId;
  while (counted < cap) {
    const page = (await redis.xrange(stream, `(${from}`, '+', 'COUNT', Math.min(COUNT_PAGE, cap - counted))) as [string, string[]][];
    counted += page.length;
    if (page.length < COUNT_PAGE) break;
    from = page.at(-1)![0];
  }
  return counted;
}

/**
 * Why a sale's stream has not drained, in words an operator can act on: the entries after the group's
 * position (the first of them, and what XINFO said), and the pending ones (the oldest, who holds it and
 * how long it has been idle). Read when a wait for the drain gives up; costs a few bounded reads.
 */
export async function explainBacklog({ redis, keys }: SaleRef): Promise<string> {
  const group = orderWritersGroupOf(await redis.xinfo('GROUPS', keys.stream).catch(() => []));
  if (!group) return 'the stream or its group is missing: nothing to drain';
  const reasons: string[] = [];
  const next = (await redis.xrange(keys.stream, `(${group.lastDeliveredId}`, '+', 'COUNT', 1)) as [string, string[]][];
  if (next.length > 0) {
    reasons.push(
      `undelivered entries follow last-delivered-id ${group.lastDeliveredId} (the first ${next[0]![0]}; XINFO GROUPS lag ${group.lag ?? 'unknown'}, entries-read ${group.entriesRead ?? 'unknown'}): no worker is reading this sale's stream`,
    );
  }
  const oldest = (await redis.xpending(keys.stream, ORDER_WRITERS_GROUP, 'IDLE', 0, '-', '+', 1)) as [string, string, number, number][];
  if (oldest.length > 0) {
    const [id, consumer, idleMs, deliveries] = oldest[0]!;
    reasons.push(
      `${group.pending} entries pending, the oldest ${id} held by consumer ${consumer}, idle ${idleMs} ms after ${deliveries} deliveries: no live worker has taken it over`,
    );
  }
  return reasons.length > 0 ? reasons.join('; ') : 'drained now';
}

/** A flat [field, value, ...] reply (XINFO) as an object. */
function toRecord(flat: unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[String(flat[i])] = flat[i + 1];
  return record;
}
