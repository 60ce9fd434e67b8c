import { randomBytes } from 'node:crypto';

/**
 * The variable naming one `npm test` run (vitest.config.ts sets it; every process the run starts
 * inherits it), so the run's teardown can find whatever the run left: processes by their environment,
 * Redis keys and databases by their names.
 */
export const TEST_RUN_VARIABLE = 'FLASHSALE_TEST_RUN';

/** This run's id: lower-case hex, or `adhoc` outside a test run. */
export function testRunId(): string {
  return process.env[TEST_RUN_VARIABLE] ?? 'adhoc';
}

/** A fresh run id: short, as it goes into database names (64 characters at most). */
export function newTestRunId(): string {
  return randomBytes(3).toString('hex');
}

/** A Redis prefix no other test uses, tied to this run: `test-<run>-<label>-<random>`. */
export function testRedisPrefix(label = 't'): string {
  return `test-${testRunId()}-${label}-${randomBytes(4).toString('hex')}`;
}

/** The pattern of every Redis key a run made under its prefixes. */
export function testRedisPattern(run: string): string {
  return `test-${run}-*`;
}

/** A database name no other test uses, tied to this run: `flashsale_<label>_<run>_<random>`. */
export function testDatabaseName(label: string): string {
  return `flashsale_${label}_${testRunId()}_${randomBytes(4).toString('hex')}`;
}

/** The LIKE pattern of every database a run made. */
export function testDatabasePattern(run: string): string {
  return `flashsale\\_%\\_${run}\\_%`;
}
