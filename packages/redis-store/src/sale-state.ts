import type { SaleDefinition } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import { ORDER_WRITERS_GROUP, saleKeys, salesIndexKey } from './keys.ts';

/** A sale as Redis holds it: its definition plus the live counters. */
export interface SaleState extends SaleDefinition {
  remaining: number;
  paused: boolean;
  /** Marker written when this Redis state was created; a different one means it was rebuilt. */
  generation: string;
}

/**
 * Makes a sale live in Redis. Registers it for the workers first: a registered sale without Redis state
 * is harmless (the workers skip it), a live sale nobody consumes would strand its reservations.
 * Returns 'published', 'already_live' (nothing is overwritten), or 'too_late' when Redis ran it after
 * `notAfter` (Redis's clock; see publish-sale-2.lua) and changed nothing.
 */
export async function publishSale(
  redis: ScriptedRedis,
  prefix: string,
  sale: SaleDefinition,
  generation: string,
  { notAfter }: { notAfter?: number } = {},
): Promise<'published' | 'already_live' | 'too_late'> {
  const keys = saleKeys(prefix, sale.id);
  await redis.sadd(salesIndexKey(prefix), String(sale.id));
  const reply = await redis.publishSale(
    keys.meta,
    keys.stream,
    sale.name,
    sale.stock,
    sale.perUserLimit,
    sale.startsAt,
    sale.endsAt,
    ORDER_WRITERS_GROUP,
    generation,
    notAfter === undefined ? '' : notAfter,
  );
  return reply === 1 ? 'published' : reply === 0 ? 'already_live' : 'too_late';
}

/**
 * Takes back what a failed create published (see withdraw-sale-3.lua): 'withdrawn' or 'absent' mean no
 * Redis state of that create is left; 'has_buyers' means it took reservations and must stand;
 * 'other_generation' means the state is not this create's.
 */
export async function withdrawSale(
  redis: ScriptedRedis,
  prefix: string,
  saleId: number,
  generation: string,
): Promise<'withdrawn' | 'absent' | 'other_generation' | 'has_buyers'> {
  const keys = saleKeys(prefix, saleId);
  const reply = await redis.withdrawSale(keys.meta, keys.buyers, keys.stream, generation);
  if (reply === 1 || reply === 0) await redis.srem(salesIndexKey(prefix), String(saleId));
  return reply === 1 ? 'withdrawn' : reply === 0 ? 'absent' : reply === -1 ? 'other_generation' : 'has_buyers';
}

/** Milliseconds on Redis's clock: the one clock every process agrees on for sale windows and fences. */
export async function redisNow(redis: ScriptedRedis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

export async function readSaleState(redis: ScriptedRedis, prefix: string, saleId: number): Promise<SaleState | null> {
  const meta = await redis.hgetall(saleKeys(prefix, saleId).meta);
  if (meta.stock === undefined) return null;
  return {
    id: saleId,
    name: meta.name ?? '',
    stock: Number(meta.stock),
    remaining: Number(meta.remaining),
    perUserLimit: Number(meta.limit),
    startsAt: Number(meta.starts),
    endsAt: Number(meta.ends),
    paused: meta.paused === '1',
    generation: meta.gen ?? '',
  };
}

/** Pauses or resumes intake; false when the sale is not in Redis. */
export async function setSalePaused(redis: ScriptedRedis, prefix: string, saleId: number, paused: boolean): Promise<boolean> {
  return (await redis.setPaused(saleKeys(prefix, saleId).meta, paused ? '1' : '0')) === 1;
}

/** A buyer's record in the sale's buyers hash: `<reservationId>|<quantity>` (written by reserve-3.lua and the rebuild). */
export function parseBuyerRecord(value: string): { reservationId: string; quantity: number } {
  const [reservationId = '', quantity] = value.split('|');
  return { reservationId, quantity: Number(quantity) };
}

/** The reservation a buyer holds for a sale, as Redis recorded it. */
export async function findBuyerReservation(
  redis: ScriptedRedis,
  prefix: string,
  saleId: number,
  userId: string,
): Promise<{ reservationId: string; quantity: number } | null> {
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

/**
 * Takes a sale out of the workers' list. Only for a sale that has ended (the reserve script refuses it
 * from then on, on Redis's clock) and whose stream has drained: nothing can arrive for a worker to do.
 * Its keys stay, for the stats. A rebuild puts it back.
 */
export async function retireSale(redis: ScriptedRedis, prefix: string, saleId: number): Promise<void> {
  await redis.srem(salesIndexKey(prefix), String(saleId));
}

/** Ids of every published sale. */
export async function listSaleIds(redis: ScriptedRedis, prefix: string): Promise<number[]> {
  const members = await redis.smembers(salesIndexKey(prefix));
  return members.map(Number).filter((id) => Number.isInteger(id) && id > 0);
}
