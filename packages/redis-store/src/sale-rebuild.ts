import { DOOR_RESTORE_GRACE_MS, type SaleDefinition } from '@flashsale/domain';
import { saleRef, type StoreRef } from './store-ref.ts';
import { ORDER_WRITERS_GROUP, salesIndexKey } from './keys.ts';
import { writeNextBuyers, type BuyerPages } from './buyer-record.ts';
import { doorTermsArgs, doorGuardArgs, saleTermsArgs } from './sale-meta.ts';

/**
 * Writes a sale's Redis state from MySQL's record and leaves it paused: meta with the remaining stock
 * and the new generation, the buyers with their reservation ids (so a returning buyer is refused as
 * ALREADY_PURCHASED with the right id), the stream and group if they were lost, and the operator's
 * controls as MySQL holds them (an operator's pause survives a rebuild). The caller resumes.
 *
 * Built aside, then switched: the buyers go into the sale's next buyers hash a chunk at a time, taken
 * from `buyers` page by page (the reconciler streams them from MySQL), and rebuild-sale-6.lua then
 * renames it over the buyers and writes the meta, in one O(1) script. No command holds Redis longer
 * than one chunk, however many buyers the sale has, and nothing holds them all in memory. Until the
 * switch the old state stands whole (paused: the reconciler paused it before the rebuild), so a rebuild
 * that dies part way leaves the old state and an expiring next hash; the next attempt starts anew.
 * Returns how many buyers it wrote.
 * A queued sale whose door Redis lost gets a new one, closed for `doorRestoreMs`: answers `doorLost`
 * then.
 */
export async function rebuildSaleState(
  { redis, prefix }: StoreRef,
  sale: SaleDefinition & { operatorPaused: boolean; controlsVersion: number },
  rebuilt: { remaining: number; generation: string; buyers: BuyerPages },
  doorRestoreMs: number = DOOR_RESTORE_GRACE_MS,
): Promise<{ written: number; doorLost: boolean }> {
  const inRedis = saleRef(redis, prefix, sale.id);
  const { keys } = inRedis;
  await redis.sadd(salesIndexKey(prefix), String(sale.id));
  const written = await writeNextBuyers(inRedis, rebuilt.buyers);
  const answer = await redis.rebuildSale(
    keys.meta,
    keys.buyers,
    keys.stream,
    keys.returned,
    keys.door,
    keys.nextBuyers,
    ...saleTermsArgs(sale),
    rebuilt.remaining,
    rebuilt.generation,
    ORDER_WRITERS_GROUP,
    sale.operatorPaused ? '1' : '0',
    sale.controlsVersion,
    ...doorTermsArgs(sale.admission),
    doorRestoreMs,
    ...doorGuardArgs(sale.admission),
  );
  return { written, doorLost: Number(answer) === 2 };
}
