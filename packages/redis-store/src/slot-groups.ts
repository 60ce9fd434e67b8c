import { createRequire } from 'node:module';
import type { ChainableCommander, Redis } from 'ioredis';
import { isClusterClient } from './redis-target.ts';

/** The Redis Cluster slot of a key, {hash tag} honoured: the function ioredis itself uses (it ships no types). */
const calculateSlot = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

/** One reply of a pipeline: its error, or null and its result. */
export type PipelineReply = [error: Error | null, result: unknown];

/**
 * Runs one command per key as pipelines, and returns the replies in the keys' order. On one Redis that
 * is a single pipeline (one round trip). On a cluster, ioredis refuses a pipeline whose keys are served
 * by different masters, so the keys are grouped by the master that serves their slot, and each group's
 * pipeline goes to its master at the same time: a worker reads sales living on different masters in the
 * same poll. A key whose slot the client does not know yet (still connecting) gets a pipeline of its own.
 */
export async function pipelineBySlotGroup(
  redis: Redis,
  keys: readonly string[],
  add: (pipeline: ChainableCommander, key: string, index: number) => void,
): Promise<PipelineReply[]> {
  if (!isClusterClient(redis)) {
    const pipeline = redis.pipeline();
    keys.forEach((key, index) => add(pipeline, key, index));
    return (await pipeline.exec()) ?? [];
  }
  const slots = (redis as unknown as { slots: string[][] }).slots;
  const groups = new Map<string, number[]>();
  keys.forEach((key, index) => {
    const master = slots[calculateSlot(key)]?.[0] ?? `unknown:${index}`;
    const group = groups.get(master);
    if (group) group.push(index);
    else groups.set(master, [index]);
  });
  const replies: PipelineReply[] = new Array<PipelineReply>(keys.length);
  await Promise.all(
    [...groups.values()].map(async (indices) => {
      const pipeline = redis.pipeline();
      for (const index of indices) add(pipeline, keys[index]!, index);
      let results: PipelineReply[];
      try {
        results = (await pipeline.exec()) ?? [];
      } catch (error) {
        // The whole group failed (its master unreachable, a slot moved under it): each key says so.
        results = indices.map(() => [error as Error, null]);
      }
      indices.forEach((index, at) => (replies[index] = results[at] ?? [new Error('no reply'), null]));
    }),
  );
  return replies;
}
