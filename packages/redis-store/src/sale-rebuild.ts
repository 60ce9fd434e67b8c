import { DOOR_RESTORE_GRACE_MS, type SaleDefinition } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import { ORDER_WRITERS_GROUP, saleKeys, salesIndexKey } from './keys.ts';
import { writeBuyers, type BuyerRecord } from './buyer-record.ts';
import { admissionArgs, saleTermsArgs } from './sale-meta.ts';

/**
 * Writes a sale's Redis state from MySQL's record and leaves it paused: meta with the remaining stock
 * and the new generation, the buyers with their reservation ids (so a returning buyer is refused as
 * ALREADY_PURCHASED with the right id), the stream and group if they were lost, and the operator's
 * controls as MySQL holds them (an operator's pause survives a rebuild). The caller resumes.
 * A queued sale whose door Redis lost gets a new one, closed for `doorRestoreMs` (rebuild-sale-5.lua):
 * answers `doorLost` then.
 */
export async function rebuildSaleState(
  redis: ScriptedRedis,
  prefix: string,
  sale: SaleDefinition & { operatorPaused: boolean; controlsVersion: number },
  rebuilt: { remaining: number; generation: string; buyers: BuyerRecord[] },
  doorRestoreMs: number = DOOR_RESTORE_GRACE_MS,
): Promise<{ doorLost: boolean }> {
  const keys = saleKeys(prefix, sale.id);
  await redis.sadd(salesIndexKey(prefix), String(sale.id));
  const answer = await redis.rebuildSale(
    keys.meta,
    keys.buyers,
    keys.stream,
    keys.returned,
    keys.door,
    ...saleTermsArgs(sale),
    rebuilt.remaining,
    rebuilt.generation,
    ORDER_WRITERS_GROUP,
    sale.operatorPaused ? '1' : '0',
    sale.controlsVersion,
    ...admissionArgs(sale.admission),
    doorRestoreMs,
  );
  await writeBuyers(redis, prefix, sale.id, rebuilt.buyers);
  return { doorLost: Number(answer) === 2 };
}
