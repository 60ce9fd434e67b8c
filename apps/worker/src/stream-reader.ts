import { ORDER_WRITERS_GROUP, saleKeys, type ScriptedRedis } from '@flashsale/redis-store';

/** One raw entry of a sale stream, as XREADGROUP / XAUTOCLAIM return it. */
export interface RawEntry {
  id: string;
  fields: string[];
}

type StreamReply = [key: string, entries: [id: string, fields: string[]][]][] | null;

/** What one poll of many sales gave: the new entries of each, and the error of each sale whose read failed. */
export interface ReadRound {
  entries: Map<number, RawEntry[]>;
  failures: Map<number, unknown>;
}

/**
 * Reads new entries of many sales in one round trip (a pipeline of non-blocking XREADGROUP calls, one per
 * sale, so it also works when the sales live on different Redis Cluster slots). Each sale has its own
 * reply: a sale whose read fails (its stream key holds a string, say) is known by that reply, at no extra
 * cost, and the others' entries are read all the same; one XREADGROUP over all the streams would fail
 * whole and hide which. A sale whose stream or group is missing (not published yet, or Redis lost it)
 * yields nothing rather than a failure.
 */
export async function readNewEntries(
  redis: ScriptedRedis,
  prefix: string,
  consumer: string,
  saleIds: number[],
  count: number,
): Promise<ReadRound> {
  const pipeline = redis.pipeline();
  for (const saleId of saleIds) {
    pipeline.xreadgroup('GROUP', ORDER_WRITERS_GROUP, consumer, 'COUNT', count, 'STREAMS', saleKeys(prefix, saleId).stream, '>');
  }
  const replies = (await pipeline.exec()) ?? [];
  const round: ReadRound = { entries: new Map(), failures: new Map() };
  replies.forEach(([error, reply], index) => {
    const saleId = saleIds[index]!;
    if (error) {
      if (!/NOGROUP/.test(error.message)) round.failures.set(saleId, error);
      return;
    }
    const entries = (reply as StreamReply)?.[0]?.[1] ?? [];
    if (entries.length > 0) round.entries.set(saleId, entries.map(([id, fields]) => ({ id, fields })));
  });
  return round;
}

/**
 * Takes over entries another consumer has held for at least `minIdleMs` (it died, or is stuck), with
 * their delivery counts so that an entry that keeps failing can be set aside.
 */
export async function claimIdleEntries(
  redis: ScriptedRedis,
  prefix: string,
  consumer: string,
  saleId: number,
  minIdleMs: number,
  count: number,
): Promise<{ entry: RawEntry; deliveries: number }[]> {
  const { stream } = saleKeys(prefix, saleId);
  let claimed: [string, string[] | null][];
  try {
    const reply = (await redis.xautoclaim(stream, ORDER_WRITERS_GROUP, consumer, minIdleMs, '0-0', 'COUNT', count)) as [string, [string, string[] | null][]];
    claimed = reply[1];
  } catch (error) {
    if (/NOGROUP|no such key/i.test((error as Error).message)) return [];
    throw error;
  }
  if (claimed.length === 0) return [];
  // XAUTOCLAIM has just counted one more delivery of each; read the counts back from the pending list.
  const pending = (await redis.xpending(stream, ORDER_WRITERS_GROUP, claimed[0]![0], claimed[claimed.length - 1]![0], claimed.length, consumer)) as [string, string, number, number][];
  const deliveries = new Map(pending.map(([id, , , times]) => [id, Number(times)]));
  return claimed
    .filter((item): item is [string, string[]] => item[1] !== null)
    .map(([id, fields]) => ({ entry: { id, fields }, deliveries: deliveries.get(id) ?? 1 }));
}

/**
 * Keeps entries this consumer is still working on (a batch being retried while MySQL is away) from
 * looking idle, so no other worker takes them over meanwhile: XCLAIM ... JUSTID resets their idle time
 * without counting a delivery.
 */
export async function keepHeld(redis: ScriptedRedis, prefix: string, consumer: string, saleId: number, ids: string[]): Promise<void> {
  if (ids.length > 0) await redis.xclaim(saleKeys(prefix, saleId).stream, ORDER_WRITERS_GROUP, consumer, 0, ...ids, 'JUSTID');
}

export async function acknowledge(redis: ScriptedRedis, prefix: string, saleId: number, ids: string[]): Promise<void> {
  if (ids.length > 0) await redis.xack(saleKeys(prefix, saleId).stream, ORDER_WRITERS_GROUP, ...ids);
}
