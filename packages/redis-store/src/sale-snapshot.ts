import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';
import { redisTimeMs, SALE_COUNTER_FIELDS, saleCountersOf } from './sale-meta.ts';
import { lastEntryIdOf } from './reservation-stream.ts';

/** What Redis holds for a sale at one instant (one MULTI), on Redis's clock. */
export interface SaleSnapshot {
  /** Redis time of the snapshot, epoch ms. */
  at: number;
  /** False when the sale's meta hash is gone (Redis lost it, or it was never published). */
  present: boolean;
  stock: number;
  remaining: number;
  generation: string;
  /** The reconciler's pause. */
  paused: boolean;
  /** Version of the operator's controls the state holds (0 for none, or a state that is gone). */
  controlsVersion: number;
  /** Buyers recorded: reservations accepted by this state, plus the buyers a rebuild restored. */
  buyers: number;
  /** Id of the stream's last entry, null for an empty or missing stream. */
  lastEntryId: string | null;
  /** Entries the stream holds (XLEN): at most one means there is nothing to trim. */
  streamLength: number;
}

/** Reads a sale's counters atomically (MULTI): the reconciler's checkpoints and detection use it. */
export async function snapshotSale(redis: ScriptedRedis, prefix: string, saleId: number): Promise<SaleSnapshot> {
  const keys = saleKeys(prefix, saleId);
  const replies = await redis
    .multi()
    .time()
    .hmget(keys.meta, ...SALE_COUNTER_FIELDS)
    .hlen(keys.buyers)
    .xrevrange(keys.stream, '+', '-', 'COUNT', 1)
    .xlen(keys.stream)
    .exec();
  if (!replies) throw new Error('snapshot transaction was discarded');
  for (const [error] of replies) if (error) throw error;
  const counters = saleCountersOf(replies[1]![1]);
  return {
    at: redisTimeMs(replies[0]![1]),
    present: counters !== null,
    stock: counters?.stock ?? 0,
    remaining: counters?.remaining ?? 0,
    generation: counters?.generation ?? '',
    paused: counters?.paused ?? false,
    controlsVersion: counters?.controlsVersion ?? 0,
    buyers: Number(replies[2]![1]),
    lastEntryId: lastEntryIdOf(replies[3]![1]),
    streamLength: Number(replies[4]![1]),
  };
}
