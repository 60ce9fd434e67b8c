/**
 * A sale's admission policy: open (no `admission`, today's race) or behind the door, a waiting room
 * that admits buyers in a fair order at a set rate, never more than the stock can serve.
 */
export interface QueueAdmission {
  mode: 'queue';
  /** Seconds before startsAt the queue opens (joins earlier are 409 QUEUE_NOT_OPEN). */
  preQueueSeconds: number;
  /** Buyers the door admits per second (the operator may change it live). */
  admitPerSecond: number;
  /** Seconds an admitted buyer has to purchase before the turn passes on. */
  admissionTtlSeconds: number;
  /**
   * Admitted-and-unused buyers are kept at or below floor(remaining units x noShowFactor): 1 (default)
   * never admits more buyers than units on sale now; above 1 admits ahead for buyers who do not show.
   */
  noShowFactor: number;
  /** The operator's pause of the door: nobody new is admitted; admitted buyers keep their turn. */
  paused: boolean;
}

/** Defaults of a queued sale's settings not given at create. */
export const ADMISSION_DEFAULTS = {
  preQueueSeconds: 600,
  admitPerSecond: 50,
  admissionTtlSeconds: 120,
  noShowFactor: 1,
} as const;

/** Bounds of each setting, enforced by the admin API. */
export const ADMISSION_LIMITS = {
  preQueueSeconds: { min: 0, max: 7 * 86_400 },
  admitPerSecond: { min: 0.01, max: 100_000 },
  admissionTtlSeconds: { min: 1, max: 86_400 },
  noShowFactor: { min: 1, max: 10 },
} as const;

/**
 * Queue scores (the order of the sale's queue, a Redis sorted set): a buyer who joined before startsAt
 * holds a draw in [0, 2^52), a buyer who joined later 2^52 + their arrival number, so every pre-start
 * joiner comes before every later one, the first in random order, the others in arrival order. Both
 * stay exact integers in a double (below 2^53).
 */
export const ARRIVAL_SCORE_BASE = 2 ** 52;

/** Whether a queue score is a pre-start draw (as opposed to an arrival number). */
export const isDraw = (score: number): boolean => score < ARRIVAL_SCORE_BASE;
