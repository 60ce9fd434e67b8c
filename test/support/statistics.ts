/**
 * The fixed statistical procedures of the door's fairness test (test/e2e/door-fairness.test.ts).
 */

/** Spearman's rank correlation of two rankings of the same n items, without ties: 1 - 6 sum d^2 / (n (n^2 - 1)). */
export function spearmanRho(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) throw new Error('rankings of different lengths');
  const n = a.length;
  let sum = 0;
  for (let i = 0; i < n; i += 1) sum += (a[i]! - b[i]!) ** 2;
  return 1 - (6 * sum) / (n * (n * n - 1));
}

/** Pearson's chi-square statistic of observed counts against equal expected counts. */
export function chiSquareUniform(counts: readonly number[]): number {
  const total = counts.reduce((sum, count) => sum + count, 0);
  const expected = total / counts.length;
  return counts.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
}

/** Upper critical values of chi-square with 9 degrees of freedom (ten bins). */
export const CHI_SQUARE_9DF = { p01: 21.666, p001: 27.877 } as const;
