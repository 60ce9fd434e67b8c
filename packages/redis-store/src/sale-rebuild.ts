import type { SaleDefinition } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import { ORDER_WRITERS_GROUP, saleKeys, salesIndexKey } from './keys.ts';
import { writeBuyers, type BuyerRecord } from './buyer-record.ts';
import { admissionArgs, saleTermsArgs } from './sale-meta.ts';

/**
 * Writes a sale's Redis state from MySQL's record and leaves it paused: meta with the remaining stock
 * and the new generation, the buyers with their reservation ids (so a returning buyer is refused as
 * ALREADY_PURCHASED with the right id), the stream and group if they were lost, and the operator's
 * controls as MySQL holds them (an operator's pause survives a rebuild). The caller resumes.
 */
export async function rebuildSaleState(
  redis: ScriptedRedis,
  prefix: string,
  sale: SaleDefinition & { operatorPaused: boolean; controlsVersion: number },
  rebuilt: { remaining: number; generation: string; buyers: BuyerRecord[] },
): Promise<void> {
  const keys = saleKeys(prefix, sale.id);
  await redis.sadd(salesIndexKey(prefix), String(sale.id));
  await redis.rebuildSale(
    keys.meta,
    keys.buyers,
    keys.stream,
    keys.returned,
    ...saleTermsArgs(sale),
    rebuilt.remaining,
    rebuilt.generation,
    ORDER_WRITERS_GROUP,
    sale.operatorPaused ? '1' : '0',
    sale.controlsVersion,
    ...admissionArgs(sale.admission),
  );
  await writeBuyers(redis, prefix, sale.id, rebuilt.buyers);
}
