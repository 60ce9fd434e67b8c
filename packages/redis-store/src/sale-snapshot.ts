import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';

/** What Redis holds for a sale at one instant (one MULTI), on Redis's clock. */
export interface SaleSnapshot {
  /** Redis time of the snapshot, epoch ms. */
  at: number;
  /** False when the sale's meta hash is gone (Redis lost it, or it was never published). */
  present: boolean;
  stock: number;
  remaining: number;
  generation: string;
  paused: boolean;
  /** Buyers recorded: reservations accepted by this state, plus the buyers a rebuild restored. */
  buyers: number;
  /** Id of the stream's last entry, null for an empty or missing stream. */
  lastEntryId: string | null;
}

/** Reads a sale's counters atomically (MULTI): the reconciler's checkpoints and detection use it. */
export async function snapshotSale(redis: ScriptedRedis, prefix: string, saleId: number): Promise<SaleSnapshot> {
  const keys = saleKeys(prefix, saleId);
  const replies = await redis.multi().time().hmget(keys.meta, 'stock', 'remaining', 'gen', 'paused').hlen(keys.buyers).xrevrange(keys.stream, '+', '-', 'COUNT', 1).exec();
  if (!replies) throw new Error('snapshot transaction was discarded');
  for (const [error] of replies) if (error) throw error;
  const [seconds, micros] = replies[0]![1] as [string, string];
  const [stock, remaining, generation, paused] = replies[1]![1] as (string | null)[];
  return {
    at: Number(seconds) * 1000 + Math.floor(Number(micros) / 1000),
    present: stock !== null && stock !== undefined,
    stock: Number(stock ?? 0),
    remaining: Number(remaining ?? 0),
    generation: generation ?? '',
    paused: paused === '1',
    buyers: Number(replies[2]![1]),
    lastEntryId: ((replies[3]![1] as [string, string[]][])[0] ?? [null])[0],
  };
}

/**
 * Whether the sale's stream still holds the entry with this id. Only acknowledged entries older than a
 * checkpoint the reconciler has verified are ever removed (trimAcknowledged), so a checkpoint's own
 * entry goes only if Redis went back in time.
 */
export async function streamHasEntry(redis: ScriptedRedis, prefix: string, saleId: number, entryId: string): Promise<boolean> {
  return (await redis.xrange(saleKeys(prefix, saleId).stream, entryId, entryId)).length > 0;
}
