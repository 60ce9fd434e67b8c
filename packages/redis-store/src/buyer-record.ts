import type { SaleRef } from './store-ref.ts';
import { chunksOf } from './chunks.ts';
import { hashPages } from './hash-scan.ts';

/**
 * A sale's buyers hash (`buyers` in keys.ts): user id -> `<reservationId>|<quantity>|<reservedAt>`, the
 * reservation the buyer holds and when Redis accepted it (epoch ms; records written before the time was
 * kept have two fields). The reserve script writes it through lua/includes/buyer-record.lua, the rebuild
 * here (writeNextBuyers); it is parsed here only.
 */

/** A buyer's reservation, as the buyers hash records it. */
export interface BuyerReservation {
  reservationId: string;
  quantity: number;
}

/** A buyer who holds units of a sale, to be recorded again in Redis. */
export interface BuyerRecord extends BuyerReservation {
  userId: string;
  /** When Redis accepted the reservation (epoch ms); undefined for a record that does not say. */
  reservedAt?: number;
}

export function encodeBuyerRecord({ reservationId, quantity, reservedAt }: BuyerReservation & { reservedAt?: number }): string {
  return reservedAt === undefined ? `${reservationId}|${quantity}` : `${reservationId}|${quantity}|${reservedAt}`;
}

export function parseBuyerRecord(value: string): BuyerReservation {
  const [reservationId = '', quantity] = value.split('|');
  return { reservationId, quantity: Number(quantity) };
}

/** When Redis accepted the reservation a buyer's record holds (epoch ms); undefined for a record without it. */
export function reservedAtOfBuyerRecord(value: string): number | undefined {
  const at = value.split('|')[2];
  return at !== undefined && /^\d+$/.test(at) ? Number(at) : undefined;
}

/** The reservation a buyer holds for a sale, as Redis recorded it. */
export async function findBuyerReservation({ redis, keys }: SaleRef, userId: string): Promise<BuyerReservation | null> {
  const value = await redis.hget(keys.buyers, userId);
  return value ? parseBuyerRecord(value) : null;
}

/**
 * Every buyer of a sale and the reservation id they hold, read in pages (HSCAN: Redis serves others
 * between them). Null when the sale has more than `max` buyers: a caller that keeps them in memory
 * stays bounded. Not a snapshot of one instant: meant for a sale that takes no more buyers (sold out, or
 * ended), whose hash only a rebuild changes, and a rebuild is announced.
 */
export async function readBuyers({ redis, keys }: SaleRef, max: number): Promise<Map<string, string> | null> {
  const buyers = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, page] = await redis.hscan(keys.buyers, cursor, 'COUNT', 1000);
    for (let i = 0; i + 1 < page.length; i += 2) buyers.set(page[i]!, parseBuyerRecord(page[i + 1]!).reservationId);
    if (buyers.size > max) return null;
    cursor = next;
  } while (cursor !== '0');
  return buyers;
}

/** A buyer's record as a page of heldReservationPages gives it: when Redis accepted it, if the record says. */
export interface HeldReservation extends BuyerRecord {
  reservedAt?: number;
}

/**
 * Every buyer record of the sale, a page (HSCAN COUNT `pageSize`) at a time: what a reconciliation checks
 * against MySQL with the sale paused and drained. Only one page is held at a time.
 */
export async function* heldReservationPages({ redis, keys }: SaleRef, pageSize: number): AsyncGenerator<HeldReservation[]> {
  for await (const flat of hashPages(redis, keys.buyers, pageSize)) {
    const page: HeldReservation[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const reservedAt = reservedAtOfBuyerRecord(flat[i + 1]!);
      page.push({ userId: flat[i]!, ...parseBuyerRecord(flat[i + 1]!), ...(reservedAt !== undefined && { reservedAt }) });
    }
    yield page;
  }
}

/** Every buyer of a sale with their reservation, in one HGETALL: for a checker that reads a whole sale once. */
export async function readAllBuyers({ redis, keys }: SaleRef): Promise<BuyerRecord[]> {
  const hash = await redis.hgetall(keys.buyers);
  return Object.entries(hash).map(([userId, value]) => ({ userId, ...parseBuyerRecord(value) }));
}

/**
 * Buyers per HSET of a rebuild. What bounds how long one command holds Redis: each field costs Redis about
 * a microsecond (hash a short key, store a ~60-byte record; the table grows by incremental rehash, never
 * all at once), so a thousand stay near a millisecond even on a busy machine (docs/SCALING.md has the
 * measured figure), while a 300,000-buyer sale still needs only 300 round trips.
 */
export const BUYERS_PER_CALL = 1000;

/**
 * How long the next buyers hash of a rebuild outlives its last chunk: far longer than any pause between
 * two chunks (a MySQL page read), short enough that a rebuild that died leaves nothing behind for long.
 */
const NEXT_BUYERS_TTL_MS = 10 * 60_000;

/** Buyers, all at once (a test, a small sale) or as pages read one after the other (the reconciler from MySQL). */
export type BuyerPages = readonly BuyerRecord[] | AsyncIterable<readonly BuyerRecord[]>;

/**
 * Writes a rebuild's buyers into the sale's next buyers hash (`nextBuyers`, keys.ts), from an empty one,
 * at most BUYERS_PER_CALL per HSET, holding one page at a time: memory and each command's cost stay flat
 * whatever the number of buyers. Every chunk renews the hash's expiry, so it vanishes if the rebuild dies
 * before rebuild-sale-6.lua renames it over the buyers. Returns how many buyers it wrote.
 */
export async function writeNextBuyers({ redis, keys }: SaleRef, buyers: BuyerPages): Promise<number> {
  const key = keys.nextBuyers;
  await redis.unlink(key);
  let written = 0;
  const pages: AsyncIterable<readonly BuyerRecord[]> | Iterable<readonly BuyerRecord[]> =
    Symbol.asyncIterator in buyers ? buyers : [buyers];
  for await (const page of pages) {
    for (const chunk of chunksOf(page, BUYERS_PER_CALL)) {
      const fields: string[] = [];
      for (const buyer of chunk) fields.push(buyer.userId, encodeBuyerRecord(buyer));
      await redis
        .multi()
        .hset(key, ...fields)
        .pexpire(key, NEXT_BUYERS_TTL_MS)
        .exec();
      written += chunk.length;
    }
  }
  return written;
}
