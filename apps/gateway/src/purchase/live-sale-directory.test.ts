import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { LiveSaleDirectory } from './live-sale-directory.ts';

describe('LiveSaleDirectory', () => {
  it('never asks MySQL again while a refresh is still waiting for it: one query at a time, however slow', async () => {
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    const answers: (() => void)[] = [];
    // A MySQL that answers each read only when the test says so: every read outlasts many periods.
    const sales = {
      listLiveSales: async () => {
        calls += 1;
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise<void>((resolve) => answers.push(resolve));
        inFlight -= 1;
        return [{ id: 7, msLeft: 60_000 }];
      },
    };
    const directory = new LiveSaleDirectory(sales, createLogger('test', 'silent'), 10);
    const started = directory.start();
    answers.shift()!(); // the first load
    await started;
    expect(directory.isLive(7)).toBe(true);
    // The next period's read starts, then ten more periods pass while it waits: none starts another.
    await expect.poll(() => calls, { timeout: 10_000 }).toBe(2);
    await sleep(100);
    expect(calls).toBe(2);
    answers.shift()!();
    // Once it is answered, the periods after it read again, one at a time.
    await expect.poll(() => calls, { timeout: 10_000 }).toBe(3);
    expect(most).toBe(1);
    directory.stop();
    for (const answer of answers) answer();
  });
});
