import { createOrderStore, type PrismaClient } from '@flashsale/order-store';
import { reserveArgs, type SaleStore, type ScriptedRedis } from '@flashsale/redis-store';
import { newReservationId } from '@flashsale/domain';
import { signBuyerTokens } from '@flashsale/harness';
import type { PathName } from './summary.ts';

/**
 * The bench's buyers, each with an HS256 token signed with `secret`: more than the fastest contender
 * answers in a run of `longestRunSeconds` (over 40,000 a second has been seen), so that no accept run
 * meets one twice (each run gets a sale of its own, so the same buyers serve every run).
 */
export function benchBuyers(longestRunSeconds: number, secret: string): { ids: string[]; buyers: { id: string; token: string }[] } {
  const ids = Array.from({ length: Math.max(60_000, Math.ceil(longestRunSeconds * 80_000)) }, (_, i) => `b${i}`);
  const tokens = signBuyerTokens(ids, { secret, ttlSeconds: 24 * 3600 });
  return { ids, buyers: ids.map((id, i) => ({ id, token: tokens[i]! })) };
}

/** Buyers who already hold a reservation on the duplicate path; its load cycles through them. */
export const DUPLICATE_BUYERS = 20_000;

/** The buyers a path's load goes round: the first DUPLICATE_BUYERS on the duplicate path, every one otherwise. */
export const cycleOf = (path: PathName): number | undefined => (path === 'duplicate' ? DUPLICATE_BUYERS : undefined);

/**
 * A fresh sale set up for one path, in MySQL and published to `store`: ample stock (accept), one unit
 * already taken (sold out), or the first DUPLICATE_BUYERS of `ids` already holding one (duplicate), by
 * the reserve script pipelined on `redis`, the client `store` is bound to. Returns its id.
 */
export async function openPathSale(
  prisma: PrismaClient,
  redis: ScriptedRedis,
  store: SaleStore,
  path: PathName,
  ids: readonly string[],
  name: string,
): Promise<number> {
  const sale = await createOrderStore(prisma).insertSale({
    name,
    stock: path === 'sold_out' ? 1 : 100_000_000,
    perUserLimit: 1,
    startsAt: new Date(Date.now() - 60_000),
    endsAt: new Date(Date.now() + 3_600_000),
  });
  await store.publish(sale, sale.generation);
  const { keys } = store.sale(sale.id);
  const prebuy = path === 'sold_out' ? ['someone'] : path === 'duplicate' ? ids.slice(0, DUPLICATE_BUYERS) : [];
  for (let start = 0; start < prebuy.length; start += 1000) {
    const pipeline = redis.pipeline() as unknown as ScriptedRedis & { exec(): Promise<unknown> };
    for (const buyer of prebuy.slice(start, start + 1000))
      void pipeline.reserve(...reserveArgs(keys, buyer, 1, newReservationId(sale.id), 3));
    await pipeline.exec();
  }
  return sale.id;
}
