import { vi } from 'vitest';

/**
 * Polls `read` every 50 ms until `done` holds, and returns that value; fails after `timeoutMs` with the
 * last value seen. vitest's vi.waitFor, for a value to keep (a row, a log line); a value only asserted
 * is `expect.poll(read).toBe(...)`.
 */
export function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await read();
      if (!done(value)) throw new Error(`condition not met within ${timeoutMs} ms; last value ${JSON.stringify(value)}`);
      return value;
    },
    { timeout: timeoutMs, interval: 50 },
  );
}
