import { describe, expect, it } from 'vitest';
import { WatchStepOverdueError, withinDeadline } from './watch-deadline.ts';

describe('a step of the watch within its deadline', () => {
  it('gives the step its result when it finishes', async () => {
    expect(await withinDeadline('look', 60_000, async () => 'seen')).toBe('seen');
  });

  it('passes over a step that never finishes, naming it, and tells the step by its signal', async () => {
    let told: AbortSignal | undefined;
    const error = await withinDeadline('look', 20, (signal) => {
      told = signal;
      return new Promise<never>(() => undefined);
    }).catch((e: unknown) => e);
    expect({
      overdue: error instanceof WatchStepOverdueError,
      step: (error as WatchStepOverdueError).step,
      aborted: told?.aborted,
      reason: told?.reason,
    }).toEqual({
      overdue: true,
      step: 'look',
      aborted: true,
      reason: error,
    });
  });

  it("passes a step's own failure on", async () => {
    await expect(withinDeadline('list', 60_000, () => Promise.reject(new Error('MySQL refused')))).rejects.toThrow('MySQL refused');
  });
});
