import { LAST_DATETIME_MS, type DeadLetterReason, type Reservation } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import type { SaleRef, StoreRef } from './store-ref.ts';
import { ORDER_WRITERS_GROUP, saleKeys } from './keys.ts';
import { pipelineBySlotGroup } from './slot-groups.ts';

/**
 * A sale's stream of reservations (`stream` in keys.ts, read by the group ORDER_WRITERS_GROUP): the one
 * TypeScript module that reads it. The reserve script writes each entry (lua/includes/reservation-entry.lua):
 * fields `r` reservation id, `u` user id, `q` quantity, `t` time accepted (epoch ms, Redis clock), `g`
 * the generation of the sale's Redis state that accepted it, in that order. Short names because every
 * accepted purchase writes them.
 */

/** One entry as Redis gives it: its id and its fields as a flat [field, value, ...] list. */
export interface StreamEntry {
  id: string;
  fields: string[];
}

/** A reservation read from the stream, with the id of its entry, which acknowledges it. */
export interface ReservationEntry extends Reservation {
  entryId: string;
}

export type DecodedEntry =
  | { ok: true; reservation: ReservationEntry }
  | { ok: false; entryId: string; fields: string[]; reason: Extract<DeadLetterReason, 'MALFORMED_ENTRY'> };

/**
 * Decodes one stream entry; a malformed one is reported, never thrown, so it can be dead-lettered. The one
 * statement of what a well-formed entry is: the dead-letter script is told its verdict (dead-letters.ts).
 */
export function decodeReservation(saleId: number, entryId: string, fields: string[]): DecodedEntry {
  const field = (name: string, at: number): string | undefined => (fields[at] === name ? fields[at + 1] : fieldNamed(fields, name));
  // The reserve script writes the fields in this order; looked up by name should an entry differ.
  const reservationId = field('r', 0);
  const userId = field('u', 2);
  const quantity = digitsValue(field('q', 4));
  const reservedAt = digitsValue(field('t', 6));
  const generation = field('g', 8);
  if (!reservationId || !userId || !generation || !Number.isSafeInteger(quantity) || quantity < 1 || !isStorableTime(reservedAt)) {
    return { ok: false, entryId, fields, reason: 'MALFORMED_ENTRY' };
  }
  return { ok: true, reservation: { entryId, reservationId, saleId, userId, quantity, reservedAt, generation } };
}

/** Epoch ms that MySQL can store as a DATETIME: anything else would fail the write on every retry. */
function isStorableTime(epochMs: number): boolean {
  return Number.isSafeInteger(epochMs) && epochMs >= 0 && epochMs <= LAST_DATETIME_MS;
}

/** A number written in digits, as the reserve script writes them; NaN else (Number() reads '' as 0, ' 2' or '0x2' as 2). */
function digitsValue(value: string | undefined): number {
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : NaN;
}

function fieldNamed(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

type EntryReply = [id: string, fields: string[]];
type StreamReply = [key: string, entries: EntryReply[]][] | null;
/** One row of XPENDING's extended form. */
type PendingReply = [id: string, consumer: string, idleMs: number, deliveries: number];

/** What one poll of many sales gave: the new entries of each, and the error of each sale whose read failed. */
export interface ReadRound {
  entries: Map<number, StreamEntry[]>;
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
export async function readNewEntries({ redis, prefix }: StoreRef, consumer: string, saleIds: number[], count: number): Promise<ReadRound> {
  const streams = saleIds.map((saleId) => saleKeys(prefix, saleId).stream);
  const replies = await pipelineBySlotGroup(redis, streams, (pipeline, stream) =>
    pipeline.xreadgroup('GROUP', ORDER_WRITERS_GROUP, consumer, 'COUNT', count, 'STREAMS', stream, '>'),
  );
  const round: ReadRound = { entries: new Map(), failures: new Map() };
  replies.forEach(([error, reply], index) => {
    const saleId = saleIds[index]!;
    if (error) {
      if (!/NOGROUP/.test(error.message)) round.failures.set(saleId, error);
      return;
    }
    const entries = (reply as StreamReply)?.[0]?.[1] ?? [];
    if (entries.length > 0)
      round.entries.set(
        saleId,
        entries.map(([id, fields]) => ({ id, fields })),
      );
  });
  return round;
}

/** What one claim over many sales took: the entries of each (with their delivery counts), and each sale's failure. */
export interface ClaimRound {
  claimed: Map<number, { entry: StreamEntry; deliveries: number }[]>;
  failures: Map<number, Error>;
}

/**
 * Takes over entries another consumer has held for at least `minIdleMs` (it died, or is stuck), with
 * their delivery counts so that an entry that keeps failing can be set aside: for many sales in two round trips (pipelines of one command per sale, so it works
 * across Redis Cluster slots the way readNewEntries does): XAUTOCLAIM on each, then XPENDING for the
 * delivery counts of the sales that had something to take. A sale whose claim fails is reported on its own.
 */
export async function claimIdleEntriesOf(
  { redis, prefix }: StoreRef,
  consumer: string,
  saleIds: number[],
  minIdleMs: number,
  count: number,
): Promise<ClaimRound> {
  const round: ClaimRound = { claimed: new Map(), failures: new Map() };
  const streams = saleIds.map((saleId) => saleKeys(prefix, saleId).stream);
  const claims = await pipelineBySlotGroup(redis, streams, (pipeline, stream) =>
    pipeline.xautoclaim(stream, ORDER_WRITERS_GROUP, consumer, minIdleMs, '0-0', 'COUNT', count),
  );
  const taken = new Map<number, [string, string[] | null][]>();
  claims.forEach(([error, reply], index) => {
    const saleId = saleIds[index]!;
    if (error) {
      if (!/NOGROUP|no such key/i.test(error.message)) round.failures.set(saleId, error);
      return;
    }
    const items = (reply as [string, [string, string[] | null][]])[1];
    if (items.length > 0) taken.set(saleId, items);
  });
  if (taken.size === 0) return round;
  // XAUTOCLAIM has just counted one more delivery of each; read the counts back from the pending list.
  const claimed = [...taken];
  const replies = await pipelineBySlotGroup(
    redis,
    claimed.map(([saleId]) => saleKeys(prefix, saleId).stream),
    (pipeline, stream, index) => {
      const items = claimed[index]![1];
      pipeline.xpending(stream, ORDER_WRITERS_GROUP, items[0]![0], items[items.length - 1]![0], items.length, consumer);
    },
  );
  claimed.forEach(([saleId, items], index) => {
    const [error, reply] = replies[index] ?? [new Error('no reply to XPENDING'), null];
    // Without the counts an entry that keeps failing would never be set aside: the entries stay pending
    // on this consumer and are claimed again after minIdleMs.
    if (error) return void round.failures.set(saleId, error);
    const deliveries = new Map((reply as PendingReply[]).map(([id, , , times]) => [id, Number(times)]));
    round.claimed.set(
      saleId,
      items
        .filter((item): item is [string, string[]] => item[1] !== null)
        .map(([id, fields]) => ({ entry: { id, fields }, deliveries: deliveries.get(id) ?? 1 })),
    );
  });
  return round;
}

/**
 * Keeps entries this consumer is still working on (a batch being retried while MySQL is away) from
 * looking idle, so no other worker takes them over meanwhile: XCLAIM ... JUSTID resets their idle time
 * without counting a delivery.
 */
export async function keepHeld({ redis, prefix }: StoreRef, consumer: string, saleId: number, ids: string[]): Promise<void> {
  if (ids.length > 0) await redis.xclaim(saleKeys(prefix, saleId).stream, ORDER_WRITERS_GROUP, consumer, 0, ...ids, 'JUSTID');
}

/** Acknowledges entries the order writers are done with: written as orders (or found written already). */
export async function acknowledge({ redis, keys }: SaleRef, entryIds: string[]): Promise<void> {
  if (entryIds.length > 0) await redis.xack(keys.stream, ORDER_WRITERS_GROUP, ...entryIds);
}

/** The id of the stream's last entry, from an `XREVRANGE <stream> + - COUNT 1` reply; null for an empty or missing stream. */
export function lastEntryIdOf(reply: unknown): string | null {
  return (reply as EntryReply[])[0]?.[0] ?? null;
}

/**
 * The reservations of the stream that are not acknowledged yet, up to the entry `lastId`: the entries
 * after `lastDeliveredId` (the group's position: nobody read them yet) and those pending on a consumer,
 * both listed in pages. Malformed entries are left out: they never took stock.
 */
export async function readUnacknowledged(
  { redis, keys, saleId }: SaleRef,
  { lastDeliveredId, lastId }: { lastDeliveredId: string; lastId: string },
): Promise<ReservationEntry[]> {
  const { stream } = keys;
  const entries = await readRange(redis, stream, `(${lastDeliveredId}`, lastId);
  if (lastId !== '0-0') {
    for (let from = '-'; ;) {
      const pending = (await redis.xpending(stream, ORDER_WRITERS_GROUP, from, lastId, PAGE)) as PendingReply[];
      if (pending.length > 0) {
        const pipeline = redis.pipeline();
        for (const [id] of pending) pipeline.xrange(stream, id, id);
        for (const [, reply] of (await pipeline.exec()) ?? []) entries.push(...((reply as EntryReply[] | null) ?? []));
      }
      if (pending.length < PAGE) break;
      from = `(${pending[pending.length - 1]![0]}`;
    }
  }
  return entries.flatMap(([id, fields]) => {
    const decoded = decodeReservation(saleId, id, fields);
    return decoded.ok ? [decoded.reservation] : [];
  });
}

/** Entries or pending ids per read of readUnacknowledged: each reply stays small, however much is in flight. */
const PAGE = 1000;

async function readRange(redis: ScriptedRedis, key: string, from: string, to: string): Promise<EntryReply[]> {
  if (to === '0-0') return [];
  const entries: EntryReply[] = [];
  let start = from;
  for (;;) {
    const chunk = (await redis.xrange(key, start, to, 'COUNT', PAGE)) as EntryReply[];
    entries.push(...chunk);
    if (chunk.length < PAGE) return entries;
    start = `(${chunk[chunk.length - 1]![0]}`;
  }
}

/**
 * Whether the sale's stream still holds the entry with this id. Only acknowledged entries older than a
 * checkpoint the reconciler has verified are ever removed (trimAcknowledged), so a checkpoint's own
 * entry goes only if Redis went back in time.
 */
export async function streamHasEntry({ redis, keys }: SaleRef, entryId: string): Promise<boolean> {
  return (await redis.xrange(keys.stream, entryId, entryId)).length > 0;
}
