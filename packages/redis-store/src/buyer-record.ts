import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';

/**
 * A sale's buyers hash (`buyers` in keys.ts): user id -> `<reservationId>|<quantity>|<reservedAt>`, the
 * reservation the buyer holds and when Redis accepted it (epoch ms; records written before the time was
 * kept have two fields). The reserve script writes it through lua/includes/buyer-record.lua, the rebuild
 * here (writeBuyers); it is parsed here only.
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
export async function findBuyerReservation(redis: ScriptedRedis, prefix: string, saleId: number, userId: string): Promise<BuyerReservation | null> {
  const value = await redis.hget(saleKeys(prefix, saleId).buyers, userId);
  return value ? parseBuyerRecord(value) : null;
}

/**
 * Every buyer of a sale and the reservation id they hold, read in pages (HSCAN: Redis serves others
 * between them). Null when the sale has more than `max` buyers: a caller that keeps them in memory
 * stays bounded. Not a snapshot of one instant: meant for a sale that takes no more buyers (sold out, or
 * ended), whose hash only a rebuild changes, and a rebuild is announced.
 */
export async function readBuyers(redis: ScriptedRedis, prefix: string, saleId: number, max: number): Promise<Map<string, string> | null> {
  const key = saleKeys(prefix, saleId).buyers;
  const buyers = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, page] = await redis.hscan(key, cursor, 'COUNT', 1000);
    for (let i = 0; i + 1 < page.length; i += 2) buyers.set(page[i]!, parseBuyerRecord(page[i + 1]!).reservationId);
    if (buyers.size > max) return null;
    cursor = next;
  } while (cursor !== '0');
  return buyers;
}

/** Every buyer of a sale with their reservation, in one HGETALL: for a checker that reads a whole sale once. */
export async function readAllBuyers(redis: ScriptedRedis, prefix: string, saleId: number): Promise<BuyerRecord[]> {
  const hash = await redis.hgetall(saleKeys(prefix, saleId).buyers);
  return Object.entries(hash).map(([userId, value]) => ({ userId, ...parseBuyerRecord(value) }));
}

const BUYERS_PER_CALL = 1000;

/** Records buyers in the sale's hash, a thousand per HSET: the rebuild's refill, after its script emptied the hash. */
export async function writeBuyers(redis: ScriptedRedis, prefix: string, saleId: number, buyers: BuyerRecord[]): Promise<void> {
  const key = saleKeys(prefix, saleId).buyers;
  for (let i = 0; i < buyers.length; i += BUYERS_PER_CALL) {
    const chunk = buyers.slice(i, i + BUYERS_PER_CALL);
    await redis.hset(key, Object.fromEntries(chunk.map((buyer) => [buyer.userId, encodeBuyerRecord(buyer)])));
  }
}
