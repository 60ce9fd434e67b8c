/**
 * A monotonic clock in ms that only the test moves, handed to the gateway (`GatewayDeps.now`) for its
 * rate-limit windows and verdict TTL: a test steps it instead of waiting for the next wall-clock second.
 */
export interface ManualClock {
  now: () => number;
  /** Moves the clock on by `ms`. */
  advance(ms: number): void;
  /** Moves the clock to the first millisecond of its next second: a fresh window for every rate limit. */
  nextSecond(): void;
}

export function manualClock(start = 1_000_000): ManualClock {
  let ms = start;
  return {
    now: () => ms,
    advance(by) {
      ms += by;
    },
    nextSecond() {
      ms = (Math.floor(ms / 1000) + 1) * 1000;
    },
  };
}
