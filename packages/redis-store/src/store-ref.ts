import type { Redis } from 'ioredis';
import type { ScriptedRedis } from './scripts.ts';
import { saleKeys, type SaleKeys } from './keys.ts';

/**
 * The deployment's client and key prefix, bound once (createSaleStore): what a record function that spans
 * sales, or names its sale in its argument, takes first. A record that runs none of the scripts asks for
 * a plain client (`StoreRef<Redis>`).
 */
export interface StoreRef<R extends Redis = ScriptedRedis> {
  readonly redis: R;
  readonly prefix: string;
}

/**
 * One sale bound to the store: its id and its key names, computed once per `sale(id)`. What every record
 * function of one sale takes first, so none threads (redis, prefix, saleId) or names the keys again.
 */
export interface SaleRef extends StoreRef {
  readonly saleId: number;
  readonly keys: SaleKeys;
}

export function saleRef(redis: ScriptedRedis, prefix: string, saleId: number): SaleRef {
  return { redis, prefix, saleId, keys: saleKeys(prefix, saleId) };
}
