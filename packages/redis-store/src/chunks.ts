/**
 * `items` cut into runs of at most `size`, in order: what bounds each command or script call that is
 * given a list (a run costs Redis about the same however long the whole list is). None for no items.
 */
export function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}
