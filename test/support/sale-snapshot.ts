import { saleKeys } from '@flashsale/redis-store';
import type { TestContext } from './context.ts';

/** Everything Redis holds for one sale, plus every key under the context's prefix. */
export interface SaleSnapshot {
  meta: Record<string, string>;
  buyers: Record<string, string>;
  streamLength: number;
  stream: [id: string, fields: string[]][];
  keys: string[];
}

/**
 * What a refusal must leave untouched: taken before and after a rejected request, the two snapshots are
 * equal when nothing was written, not even a key created under another name.
 */
export async function snapshotSale(ctx: TestContext, saleId: number): Promise<SaleSnapshot> {
  const keys = saleKeys(ctx.config.REDIS_PREFIX, saleId);
  const [meta, buyers, streamLength, stream, allKeys] = await Promise.all([
    ctx.redis.hgetall(keys.meta),
    ctx.redis.hgetall(keys.buyers),
    ctx.redis.xlen(keys.stream),
    ctx.redis.xrange(keys.stream, '-', '+'),
    keysUnderPrefix(ctx),
  ]);
  return { meta, buyers, streamLength, stream, keys: allKeys };
}

/** Every key under the context's prefix, sorted. */
export async function keysUnderPrefix(ctx: TestContext): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await ctx.redis.scan(cursor, 'MATCH', `${ctx.config.REDIS_PREFIX}:*`, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found.sort();
}

/** Orders of a sale in MySQL, whatever their status. */
export function ordersOfSale(ctx: TestContext, saleId: number): Promise<number> {
  return ctx.prisma.order.count({ where: { saleId } });
}
