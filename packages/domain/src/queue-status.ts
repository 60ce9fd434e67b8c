import type { DoorChallenge } from './door-terms.ts';

/**
 * What a buyer in a sale's waiting room is told (GET /api/sales/:id/queue): a pure function of the door
 * (the frontier every gateway caches) and the buyer's place (from a signed ticket, or from Redis), so a
 * waiting buyer is answered without a Redis call. Times are epoch ms on Redis's clock.
 */
export type QueueState = 'not_joined' | 'waiting' | 'admitted' | 'used' | 'sold_out' | 'ended' | 'expired';

/** The door of one sale as the admit script last reported it (admit-queue-6.lua). */
export interface DoorView {
  saleId: number;
  /** Redis's clock when this view was read (a cache moves it on by its own monotonic clock). */
  now: number;
  startsAt: number;
  endsAt: number;
  opensAt: number;
  /** Ranks given a turn so far: ranks below it are admitted, bought or expired. */
  front: number;
  /** Buyers in the queue. */
  queued: number;
  /** Admitted buyers whose turn runs and who have not bought. */
  unused: number;
  /** Units on sale now. */
  remaining: number;
  /** Units sold but not paid for (may come back by expiry or cancel). */
  mayComeBack: number;
  /** Turns that ended without a purchase. */
  abandoned: number;
  admitPerSecond: number;
  admissionTtlSeconds: number;
  noShowFactor: number;
  /** The operator's pause of the door. */
  doorPaused: boolean;
  /** The sale itself is paused (operator or reconciler): nobody is admitted meanwhile. */
  salePaused: boolean;
  /** When this door was begun (Redis's clock): a ticket of another epoch is of a door Redis lost. */
  epoch: number;
  /** A door begun again after a loss admits nobody before this (0: not restoring). */
  restoringUntil: number;
  /** Admitted buyers whose turn runs in its show-up window: they have not shown up yet. */
  awaitingShowUp: number;
  /** The no-show rate of recent turns, as the door measured it (0 until a turn's window lapses; at most 0.9). */
  noShowRate: number;
  /** Admissions the stock bound allows now (0: held by the stock until buyers buy or turns end). */
  room: number;
  /**
   * When the next turn in its show-up window becomes overdue (its buyer not come in 7 s: counted as nobody
   * in the stock bound, so the door may move then); Redis's clock, 0 when none will.
   */
  nextOverdueAt: number;
  /** The sale's guards against account farms, as its meta holds them (door-terms.ts). */
  showUpSeconds: number;
  challenge: DoorChallenge;
  challengeMaxNumber: number;
  requireClaim: string | null;
  maxQueueSize: number | null;
}

/** Where one buyer stands: the queue score, the rank once drawn, and the turn when one was given. */
export interface QueuePlace {
  score: number;
  rank: number | null;
  /**
   * The buyer's turn: admittedUntil while it runs and is unused, minus admittedUntil once a purchase used
   * it, 0 once it ran out unused (the door recorded its abandonment), null when Redis holds no turn
   * (never given, or lost with a store that went back). Undefined when not looked up (a ticket read
   * without Redis), which is only allowed for ranks the frontier has not reached.
   */
  turn?: number | null;
}

export interface QueueAnswer {
  state: QueueState;
  position: number | null;
  ahead: number | null;
  etaSeconds: number | null;
  admittedUntil: number | null;
  /** Seconds until it is worth asking again (Retry-After). */
  retryAfterSeconds: number;
}

/** The longest a waiting buyer is told to wait before asking again, so a sudden change reaches everyone. */
export const MAX_RETRY_AFTER_SECONDS = 30;
/** For answers that will not change again (ended, expired). */
export const FINAL_RETRY_AFTER_SECONDS = 3600;

/**
 * How long a door begun again after Redis lost it admits nobody: longer than any wait a waiting buyer is
 * told (MAX_RETRY_AFTER_SECONDS), so every one of them comes back with their ticket, and is put back at
 * their place, before the frontier moves.
 */
export const DOOR_RESTORE_GRACE_MS = (MAX_RETRY_AFTER_SECONDS + 5) * 1000;

const clampRetry = (seconds: number): number => Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(seconds)));

/** Nothing left and nothing that may come back: every buyer still waiting can be told now. */
export const isSoldOutForGood = (door: DoorView): boolean => door.remaining <= 0 && door.mayComeBack <= 0;

/** Whether a buyer at `rank` needs their turn looked up in Redis (the frontier has reached them). */
export const turnNeedsLookup = (door: DoorView, rank: number | null): boolean => rank !== null && rank < door.front;

/** Ms until a door held only by its stock bound may move because a turn becomes overdue (Infinity: not so). */
function heldUntil(door: DoorView, now: number): number {
  const heldByStockOnly = !door.doorPaused && !door.salePaused && now >= door.restoringUntil;
  return heldByStockOnly && door.nextOverdueAt > now ? door.nextOverdueAt - now : Number.POSITIVE_INFINITY;
}

export function queueAnswer(door: DoorView, place: QueuePlace | null, now: number): QueueAnswer {
  const none = { position: null, ahead: null, etaSeconds: null, admittedUntil: null };
  if (now >= door.endsAt) return { state: 'ended', ...none, retryAfterSeconds: FINAL_RETRY_AFTER_SECONDS };
  if (place === null) {
    return { state: 'not_joined', ...none, retryAfterSeconds: now < door.opensAt ? clampRetry((door.opensAt - now) / 1000) : 1 };
  }
  if (typeof place.turn === 'number') {
    // A used turn is said as such: the buyer's order (their reservation) says the rest, whatever became of it.
    if (place.turn < 0) return { state: 'used', ...none, retryAfterSeconds: FINAL_RETRY_AFTER_SECONDS };
    if (place.turn > now)
      return { state: 'admitted', ...none, admittedUntil: place.turn, retryAfterSeconds: clampRetry((place.turn - now) / 1000) };
    // Abandoned: recorded (0), or run out and recorded at the door's next move, which nothing can undo but a
    // store going back (and then the buyer is told again what the door holds).
    return { state: 'expired', ...none, retryAfterSeconds: FINAL_RETRY_AFTER_SECONDS };
  }
  if (place.turn === null && place.rank !== null && place.rank < door.front) {
    // Passed by the frontier with no turn the door knows of: a store went back (a failover to a replica
    // behind, a restore) and the door is being set right. Never a final state: asked again shortly, the
    // buyer hears what the repaired door holds (their place again, a turn, or sold out).
    return { state: 'waiting', ...none, retryAfterSeconds: 2 };
  }
  if (isSoldOutForGood(door)) return { state: 'sold_out', ...none, retryAfterSeconds: MAX_RETRY_AFTER_SECONDS };
  if (place.rank === null || now < door.startsAt) {
    // Before the draw at startsAt nobody has a place yet; come back at the start.
    const toStart = Math.max(0, Math.ceil((door.startsAt - now) / 1000));
    return { state: 'waiting', ...none, etaSeconds: toStart, retryAfterSeconds: clampRetry(toStart) };
  }
  const ahead = place.rank - door.front;
  // No ETA while nothing moves the door: paused, restoring after a loss, or held by the stock bound (as many admitted buyers as
  // units, no-shows allowed for, until they buy or their turns end).
  const stalled = door.doorPaused || door.salePaused || now < door.restoringUntil || door.room <= 0;
  // Otherwise the door's pace: a lower bound, as the stock may hold it back later.
  const etaSeconds = stalled ? null : Math.ceil((ahead + 1) / door.admitPerSecond);
  return {
    state: 'waiting',
    position: ahead + 1,
    ahead,
    etaSeconds,
    admittedUntil: null,
    // Half the way to the turn, so a buyer hears of it well inside their admission's TTL; held by the stock,
    // 5 s, or sooner when a turn's buyer will be overdue (the door may move then).
    retryAfterSeconds: etaSeconds !== null ? clampRetry(etaSeconds / 2) : clampRetry(Math.min(5, heldUntil(door, now) / 1000)),
  };
}
