/** Strikes within this window that set an account aside. */
const STRIKE_WINDOW_MS = 60_000;
const STRIKES = 3;
/** How long an account stays set aside (the length of a flash sale's crowd, and more). */
const SET_ASIDE_MS = 3_600_000;

export type SetAsideReason = 'flagged' | 'challenge' | 'flood';

/**
 * The accounts this gateway process has set aside (the shadow queue): an account that failed
 * the door's checks again and again (challenges refused, joins past its budget) within a minute, three
 * strikes, is answered like a waiting buyer from then on and never admitted, so a bot learns late. Per
 * process, in memory, as the budgets are: an account spread over N gateways needs its strikes on each.
 * Bounded: at most `capacity` accounts are remembered; when full, the oldest go first.
 */
export class SetAside {
  readonly #strikes = new Map<string, number[]>();
  readonly #aside = new Map<string, number>();

  constructor(
    private readonly capacity = 100_000,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** Whether `account` is set aside now. */
  has(account: string): boolean {
    const until = this.#aside.get(account);
    if (until === undefined) return false;
    if (until > this.clock()) return true;
    this.#aside.delete(account);
    return false;
  }

  /** Counts a failed check of `account`; true once it is set aside (this strike the third within a minute). */
  strike(account: string): boolean {
    const now = this.clock();
    const recent = (this.#strikes.get(account) ?? []).filter((at) => at > now - STRIKE_WINDOW_MS);
    recent.push(now);
    this.#strikes.delete(account);
    if (recent.length < STRIKES) {
      this.#keep(this.#strikes, account, recent);
      return false;
    }
    this.#keep(this.#aside, account, now + SET_ASIDE_MS);
    return true;
  }

  #keep<T>(map: Map<string, T>, account: string, value: T): void {
    if (map.size >= this.capacity) map.delete(map.keys().next().value!);
    map.set(account, value);
  }
}
