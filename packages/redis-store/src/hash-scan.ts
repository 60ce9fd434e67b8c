import type { ScriptedRedis } from './scripts.ts';

/**
 * A hash's fields and values, a page (HSCAN COUNT `pageSize`) at a time, flat as HSCAN gives them: Redis
 * serves others between pages, and the caller holds one page at a time. Not a snapshot of one instant.
 */
export async function* hashPages(redis: ScriptedRedis, key: string, pageSize: number): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(key, cursor, 'COUNT', pageSize);
    cursor = next;
    yield flat;
  } while (cursor !== '0');
}
