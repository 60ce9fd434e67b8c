import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limiter.ts';

/** A clock the test moves by hand. */
function manualClock(start: number): { now: () => number; set(ms: number): void } {
  let ms = start;
  return { now: () => ms, set: (value) => (ms = value) };
}

describe('RateLimiter', () => {
  it('lets a buyer through up to the budget within one second, then refuses', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(2, clock.now);

    expect([limiter.take('ann'), limiter.take('ann'), limiter.take('ann'), limiter.take('ann')]).toEqual([true, true, false, false]);
  });

  it('keeps refusing until the last millisecond of the second', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(1, clock.now);
    expect(limiter.take('ann')).toBe(true);

    clock.set(10_999);
    expect(limiter.take('ann')).toBe(false);
  });

  it('gives a fresh budget when the next second starts', () => {
    const clock = manualClock(10_500);
    const limiter = new RateLimiter(1, clock.now);
    expect(limiter.take('ann')).toBe(true);
    expect(limiter.take('ann')).toBe(false);

    clock.set(11_000);
    expect(limiter.take('ann')).toBe(true);
    expect(limiter.take('ann')).toBe(false);
  });

  it('counts each buyer separately', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(1, clock.now);

    expect([limiter.take('ann'), limiter.take('bob'), limiter.take('ann'), limiter.take('bob')]).toEqual([true, true, false, false]);
  });

  it('counts refused requests too, so hammering does not earn a second pass', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(2, clock.now);
    for (let i = 0; i < 10; i += 1) limiter.take('ann');

    clock.set(10_900);
    expect(limiter.take('ann')).toBe(false);
    clock.set(11_000);
    expect(limiter.take('ann')).toBe(true);
  });

  it('forgets every buyer of a past second', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(1, clock.now);
    limiter.take('ann');
    limiter.take('bob');

    clock.set(12_000);
    expect([limiter.take('ann'), limiter.take('bob')]).toEqual([true, true]);
  });
});
