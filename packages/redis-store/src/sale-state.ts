import type { SaleDefinition } from '@flashsale/domain';
import type { SaleRef, StoreRef } from './store-ref.ts';
import { ORDER_WRITERS_GROUP, saleKeys, salesIndexKey } from './keys.ts';
import { doorTermsArgs, doorGuardArgs, saleTermsArgs } from './sale-meta.ts';
import { rebuyRuleArgs } from './buyer-history.ts';

/**
 * A sale's life in Redis: published (meta hash, stream and group, an entry in the sales index the workers
 * poll), paused and resumed, withdrawn when its create failed, retired from the index once over. The
 * records themselves are sale-meta.ts's, buyer-record.ts's and reservation-stream.ts's.
 */

/**
 * Makes a sale live in Redis. Registers it for the workers first: a registered sale without Redis state
 * is harmless (the workers skip it), a live sale nobody consumes would strand its reservations.
 * Returns 'published', 'already_live' (nothing is overwritten), or 'too_late' when Redis ran it after
 * `notAfter` (Redis's clock; see publish-sale-2.lua) and changed nothing.
 */
export async function publishSale(
  { redis, prefix }: StoreRef,
  sale: SaleDefinition,
  generation: string,
  options: { notAfter?: number } = {},
): Promise<'published' | 'already_live' | 'too_late'> {
  const keys = saleKeys(prefix, sale.id);
  await redis.sadd(salesIndexKey(prefix), String(sale.id));
  const reply = await redis.publishSale(
    keys.meta,
    keys.stream,
    ...saleTermsArgs(sale),
    ORDER_WRITERS_GROUP,
    generation,
    options.notAfter ?? '',
    ...doorTermsArgs(sale.admission),
    ...rebuyRuleArgs(sale.rebuyRule),
    ...doorGuardArgs(sale.admission),
  );
  return reply === 1 ? 'published' : reply === 0 ? 'already_live' : 'too_late';
}

/**
 * Takes back what a failed create published (see withdraw-sale-3.lua): 'withdrawn' or 'absent' mean no
 * Redis state of that create is left; 'has_buyers' means it took reservations and must stand;
 * 'other_generation' means the state is not this create's.
 */
export async function withdrawSale(
  { redis, prefix, keys, saleId }: SaleRef,
  generation: string,
): Promise<'withdrawn' | 'absent' | 'other_generation' | 'has_buyers'> {
  const reply = await redis.withdrawSale(keys.meta, keys.buyers, keys.stream, generation);
  if (reply === 1 || reply === 0) await redis.srem(salesIndexKey(prefix), String(saleId));
  return reply === 1 ? 'withdrawn' : reply === 0 ? 'absent' : reply === -1 ? 'other_generation' : 'has_buyers';
}

/**
 * Pauses or resumes intake; false when the sale is not in Redis, or holds another generation than
 * `generation` when one is given (nothing written then: see set-paused-1.lua).
 */
export async function setSalePaused({ redis, keys }: SaleRef, paused: boolean, generation?: string): Promise<boolean> {
  const only: [] | [string] = generation === undefined ? [] : [generation];
  return (await redis.setPaused(keys.meta, paused ? '1' : '0', ...only)) === 1;
}

/**
 * Takes a sale out of the workers' list. Only for a sale that has ended (the reserve script refuses it
 * from then on, on Redis's clock) and whose stream has drained: nothing can arrive for a worker to do.
 * Its keys stay, for the stats. A rebuild puts it back.
 */
export async function retireSale({ redis, prefix, saleId }: SaleRef): Promise<void> {
  await redis.srem(salesIndexKey(prefix), String(saleId));
}

/**
 * Puts sales back on the workers' list (idempotent). On a Redis Cluster the list is one key on one
 * master: that master losing its data (a flush, a failover to a replica that had not caught up) would
 * leave the sales of the other masters, intact, unread by every worker. The reconciler re-lists the
 * sales it watches that are not ready to retire, once a round.
 */
export async function keepListed({ redis, prefix }: StoreRef, saleIds: readonly number[]): Promise<void> {
  if (saleIds.length > 0) await redis.sadd(salesIndexKey(prefix), ...saleIds.map(String));
}

/** Ids of every published sale. */
export async function listSaleIds({ redis, prefix }: StoreRef): Promise<number[]> {
  const members = await redis.smembers(salesIndexKey(prefix));
  return members.map(Number).filter((id) => Number.isInteger(id) && id > 0);
}
