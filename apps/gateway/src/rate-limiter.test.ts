import { describe, expect, it } from 'vitest';
import { keyHash, RateLimiter } from './rate-limiter.ts';

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

  it('says whether a key is past its budget this second without counting it', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(1, clock.now);
    expect(limiter.over('ann')).toBe(false);
    expect(limiter.take('ann')).toBe(true);
    // At its budget, not past it: a look counts nothing, so the next take is the refused one.
    expect([limiter.over('ann'), limiter.over('ann')]).toEqual([false, false]);
    expect(limiter.take('ann')).toBe(false);
    expect([limiter.over('ann'), limiter.over('bob')]).toEqual([true, false]);
    clock.set(11_000);
    expect(limiter.over('ann')).toBe(false);
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

describe('RateLimiter, its table', () => {
  it('counts tens of thousands of keys of one second exactly, as its table grows', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(2, clock.now);
    const keys = Array.from({ length: 50_000 }, (_, i) => `buyer-${i}`);

    expect(keys.every((key) => limiter.take(key))).toBe(true);
    expect(keys.every((key) => limiter.take(key))).toBe(true);
    expect(keys.some((key) => limiter.take(key))).toBe(false);
    expect(limiter.occupancy.keys).toBe(50_000);
    expect(limiter.occupancy.slots).toBeGreaterThanOrEqual(100_000);
  });

  it('tells apart keys that differ in one character, in length, or beyond the basic plane', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(1, clock.now);
    const keys = ['ann', 'anm', 'an', 'ann ', '😀'.repeat(32), '😀'.repeat(31) + '😁', '\uD800', '\uDC00', '', '10.0.0.1', '10.0.0.10'];

    expect(keys.map((key) => limiter.take(key))).toEqual(keys.map(() => true));
    expect(keys.map((key) => limiter.take(key))).toEqual(keys.map(() => false));
  });

  it('tells apart two keys of the same hash', () => {
    // A pair whose hashes collide under seed 7, found by brute force (a birthday search over ids).
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; pair === undefined; i += 1) {
      const key = `buyer-${i}`;
      const other = seen.get(keyHash(key, 7));
      if (other !== undefined) pair = [other, key];
      else seen.set(keyHash(key, 7), key);
    }
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(1, clock.now, 7);

    expect([limiter.take(pair[0]), limiter.take(pair[1]), limiter.take(pair[0]), limiter.take(pair[1])]).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });

  it('shrinks back after ten quiet seconds, and still counts right', () => {
    const clock = manualClock(10_000);
    const limiter = new RateLimiter(1, clock.now);
    for (let i = 0; i < 20_000; i += 1) limiter.take(`attacker-${i}`);
    const grown = limiter.occupancy.slots;
    expect(grown).toBeGreaterThanOrEqual(40_000);

    for (let second = 11; second <= 20; second += 1) {
      clock.set(second * 1000);
      expect(limiter.take('ann')).toBe(true);
      expect(limiter.take('ann')).toBe(false);
    }
    clock.set(21_000);
    expect(limiter.take('ann')).toBe(true);
    expect(limiter.occupancy.slots).toBeLessThan(grown);
    expect(limiter.take('ann')).toBe(false);
    expect(limiter.take('bob')).toBe(true);
  });
});
