import { randomInt } from 'node:crypto';

/** Slots of the table at the start, and the fewest it shrinks back to. */
const MIN_SLOTS = 1024;
/** Seconds in a row that need under an eighth of the table before it shrinks. */
const QUIET_SECONDS_TO_SHRINK = 10;
/** Each slot: the key's hash, where its characters start in `chars`, how many there are, and its count. */
const SLOT_WIDTH = 4;

/**
 * Request budget per key (a buyer, or a client address) of one gateway process: a fixed one-second
 * window, kept in memory so it costs no Redis call. It stops a client hammering an endpoint from taking
 * the event loop; the one-order-per-buyer rule itself is enforced by the reserve script, not here.
 *
 * Counted exactly per key, in typed arrays rather than a Map: an open-addressing table of (hash, key's
 * place, key's length, count) and the keys' characters back to back. A Map of the second's keys kept
 * every buyer id of the crowd alive across young collections: each request wrote a new string into a
 * table in the old generation (a remembered-set entry), and each id was copied twice before the second
 * ended (measured: CHANGELOG.md, the rate limiter in typed arrays). Here a request copies its key's
 * characters once into an array the collector never scans.
 *
 * The hash is seeded at random per process, so no client can choose keys that pile onto one slot; keys
 * that share a hash are told apart by their characters. Memory stays bounded: the counts are cleared
 * when a new second starts, so the table never holds more keys than the requests of one second
 * (however many distinct buyers or addresses an attacker makes up), and it shrinks back after ten
 * seconds in a row that needed far less.
 */
export class RateLimiter {
  private window = Number.NaN;
  private slots = new Int32Array(MIN_SLOTS * SLOT_WIDTH);
  private mask = MIN_SLOTS - 1;
  private used = 0;
  /** Seconds in a row that used under an eighth of the table. */
  private quietSeconds = 0;
  private chars = new Uint16Array(MIN_SLOTS * 16);
  private charsUsed = 0;

  constructor(
    private readonly perSecond: number,
    /** A monotonic clock in ms: windows are this process's own intervals, never compared with another's. */
    private readonly now: () => number = () => performance.now(),
    /** The hash's seed: a random one per limiter, unless a test needs to know it. */
    private readonly seed = randomInt(2 ** 32) | 0,
  ) {}

  /** Counts one request; false when the key is over budget for the current second. */
  take(key: string): boolean {
    const window = Math.floor(this.now() / 1000);
    if (window !== this.window) this.startWindow(window);
    const hash = keyHash(key, this.seed);
    const at = this.slotOf(hash, key);
    const count = this.slots[at + 3]!;
    if (count === 0) {
      this.insert(at / SLOT_WIDTH, hash, key);
      return 1 <= this.perSecond;
    }
    // A key over its budget stays there (the count stops one past it): refusals count too.
    if (count > this.perSecond) return false;
    this.slots[at + 3] = count + 1;
    return count + 1 <= this.perSecond;
  }

  /**
   * Whether the key is already past its budget in the current second, counting nothing: the request
   * would be refused, and can be before any other work is done for it.
   */
  over(key: string): boolean {
    if (Math.floor(this.now() / 1000) !== this.window) return false;
    return this.slots[this.slotOf(keyHash(key, this.seed), key) + 3]! > this.perSecond;
  }

  /** Where the key's slot starts in the table: its own, or the empty one where it would go (count 0). */
  private slotOf(hash: number, key: string): number {
    const slots = this.slots;
    let slot = hash & this.mask;
    for (;;) {
      const at = slot * SLOT_WIDTH;
      if (slots[at + 3] === 0 || (slots[at] === hash && this.holds(at, key))) return at;
      slot = (slot + 1) & this.mask;
    }
  }

  /** Keys counted in the current second, and the slots the table has now (for tests). */
  get occupancy(): { keys: number; slots: number } {
    return { keys: this.used, slots: this.slots.length / SLOT_WIDTH };
  }

  private startWindow(window: number): void {
    this.window = window;
    const slotCount = this.slots.length / SLOT_WIDTH;
    this.quietSeconds = this.used * 8 < slotCount ? this.quietSeconds + 1 : 0;
    // A table far larger than recent seconds needed (after an attack's or a crowd's peak) shrinks.
    if (slotCount > MIN_SLOTS && this.quietSeconds >= QUIET_SECONDS_TO_SHRINK) {
      const smaller = Math.max(MIN_SLOTS, slotCount / 4);
      this.slots = new Int32Array(smaller * SLOT_WIDTH);
      this.mask = smaller - 1;
      this.chars = new Uint16Array(smaller * 16);
      this.quietSeconds = 0;
    } else {
      this.slots.fill(0);
    }
    this.used = 0;
    this.charsUsed = 0;
  }

  private insert(slot: number, hash: number, key: string): void {
    if (this.charsUsed + key.length > this.chars.length) {
      const grown = new Uint16Array(Math.max(this.chars.length * 2, this.charsUsed + key.length));
      grown.set(this.chars.subarray(0, this.charsUsed));
      this.chars = grown;
    }
    const chars = this.chars;
    const start = this.charsUsed;
    for (let i = 0; i < key.length; i += 1) chars[start + i] = key.charCodeAt(i);
    this.charsUsed = start + key.length;
    const at = slot * SLOT_WIDTH;
    this.slots[at] = hash;
    this.slots[at + 1] = start;
    this.slots[at + 2] = key.length;
    this.slots[at + 3] = 1;
    this.used += 1;
    // Kept at most half full, so a probe ends within a few slots.
    if (this.used * 2 > this.slots.length / SLOT_WIDTH) this.grow();
  }

  private grow(): void {
    const old = this.slots;
    const slotCount = (old.length / SLOT_WIDTH) * 2;
    const slots = new Int32Array(slotCount * SLOT_WIDTH);
    const mask = slotCount - 1;
    for (let at = 0; at < old.length; at += SLOT_WIDTH) {
      if (old[at + 3] === 0) continue;
      let slot = old[at]! & mask;
      while (slots[slot * SLOT_WIDTH + 3] !== 0) slot = (slot + 1) & mask;
      slots.set(old.subarray(at, at + SLOT_WIDTH), slot * SLOT_WIDTH);
    }
    this.slots = slots;
    this.mask = mask;
  }

  /** Whether the slot at `at` holds exactly `key`. */
  private holds(at: number, key: string): boolean {
    if (this.slots[at + 2] !== key.length) return false;
    const chars = this.chars;
    const start = this.slots[at + 1]!;
    for (let i = 0; i < key.length; i += 1) if (chars[start + i] !== key.charCodeAt(i)) return false;
    return true;
  }
}

/** FNV-1a over the key's UTF-16 code units from `seed`, then murmur3's finaliser to spread the bits. */
export function keyHash(key: string, seed: number): number {
  let h = seed ^ 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
