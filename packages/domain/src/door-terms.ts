/**
 * A queued sale's door terms (the API's `admission` member, `{ mode: "queue", ... }`): the waiting room
 * that admits buyers in a fair order at a set rate, never more than the stock can serve. A sale without
 * them is open: the first purchases to reach Redis win.
 */
export interface DoorTerms {
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
  /**
   * Seconds a new turn lasts until the buyer shows up (a purchase attempt, or POST .../queue/here);
   * only a buyer who showed up has the full admissionTtlSeconds. Equal to admissionTtlSeconds: no window.
   */
  showUpSeconds: number;
  /** A proof of work at join: 'off', 'pow' (always, at challengeMaxNumber), 'auto' (harder as joins outpace admissions). */
  challenge: DoorChallenge;
  /** The challenge's difficulty: ALTCHA's `maxnumber` (SHA-256 hashes an honest browser computes on average: half of it). */
  challengeMaxNumber: number;
  /** A buyer-token claim that must be `true` for the buyer to join (set by the shop's identity system); null: none. */
  requireClaim: string | null;
  /** The most buyers the queue holds; a join past it is 409 QUEUE_FULL. Null: no cap. */
  maxQueueSize: number | null;
}

export const DOOR_CHALLENGES = ['off', 'pow', 'auto'] as const;
export type DoorChallenge = (typeof DOOR_CHALLENGES)[number];

/** Defaults of a queued sale's settings not given at create. */
export const DOOR_TERMS_DEFAULTS = {
  preQueueSeconds: 600,
  admitPerSecond: 50,
  admissionTtlSeconds: 120,
  noShowFactor: 1,
  /** Longer than the longest Retry-After a buyer near the front is told (5 s), so a polite client is never late. */
  showUpSeconds: 20,
  challenge: 'off',
  /** About 50,000 SHA-256 on average: 30-100 ms in a browser, 25 ms of one core on the server side. */
  challengeMaxNumber: 100_000,
  requireClaim: null,
  maxQueueSize: null,
} as const;

/** Bounds of each setting, enforced by the admin API. */
export const DOOR_TERMS_LIMITS = {
  preQueueSeconds: { min: 0, max: 7 * 86_400 },
  admitPerSecond: { min: 0.01, max: 100_000 },
  admissionTtlSeconds: { min: 1, max: 86_400 },
  noShowFactor: { min: 1, max: 10 },
  showUpSeconds: { min: 1, max: 86_400 },
  challengeMaxNumber: { min: 1000, max: 10_000_000 },
  maxQueueSize: { min: 1, max: 100_000_000 },
} as const;

/**
 * What a buyer-token claim named in `requireClaim` may be called: a JSON name of a plain claim, never one
 * the token's validity rests on (registered claims: every token has or may have them).
 */
export const CLAIM_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;
export const REGISTERED_CLAIMS: readonly string[] = ['sub', 'exp', 'iat', 'nbf', 'iss', 'aud', 'jti'];

/** A queued sale's door settings against account farms where its record holds none of them: no guard at all. */
export const doorGuardsOff = (admissionTtlSeconds: number) =>
  ({
    showUpSeconds: admissionTtlSeconds,
    challenge: 'off',
    challengeMaxNumber: DOOR_TERMS_DEFAULTS.challengeMaxNumber,
    requireClaim: null,
    maxQueueSize: null,
  }) as const;

/** The most the door admits ahead of no-shows: a measured rate above it counts as this (ten turns a unit). */
export const NO_SHOW_RATE_MAX = 0.9;

/**
 * Admissions the stock bound allows (may be negative): of the `unused` running turns, those whose buyer
 * showed up count one buyer each, the `awaitingShowUp` ones still in their show-up window 1 - noShowRate
 * each (`overdue` of them, whose buyer did not come in 7 s, none), against floor(remaining x factor). The
 * door's own count is admit-queue-6.lua's (door-no-shows.lua, the same formula); this one is for
 * readings of the door that do not move it.
 */
export function admissionRoom(
  remaining: number,
  factor: number,
  unused: number,
  awaitingShowUp: number,
  overdue: number,
  noShowRate: number,
): number {
  const came = unused - awaitingShowUp;
  return Math.floor(
    (Math.floor(remaining * factor) - came) / (1 - Math.min(noShowRate, NO_SHOW_RATE_MAX)) - (awaitingShowUp - overdue) + 1e-9,
  );
}

/**
 * Queue scores (the order of the sale's queue, a Redis sorted set): a buyer who joined before startsAt
 * holds a draw in [0, 2^52), a buyer who joined later 2^52 + their arrival number, so every pre-start
 * joiner comes before every later one, the first in random order, the others in arrival order. Both
 * stay exact integers in a double (below 2^53).
 */
export const ARRIVAL_SCORE_BASE = 2 ** 52;

/** Whether a queue score is a pre-start draw (as opposed to an arrival number). */
export const isDraw = (score: number): boolean => score < ARRIVAL_SCORE_BASE;
