import { randomInt } from 'node:crypto';
import { admissionRoom, ARRIVAL_SCORE_BASE, type DoorView, type QueuePlace } from '@flashsale/domain';
import type { SaleRef } from './store-ref.ts';
import { doorGuardsOf, redisNow } from './sale-meta.ts';

/**
 * A sale's door in Redis (keys.ts: queue, turns, door, paid; lua/includes/door.lua says what each holds):
 * joining the queue, moving the frontier on and reading it, one buyer's place, and the paid units that
 * can never come back. Every operation is one script call on the sale's slot.
 *
 * Memory per waiting buyer: one member of the queue sorted set (the user id and a score: about 60-80
 * bytes with Redis's skiplist overhead for ids of ~10 characters); an admitted buyer adds one member
 * of the turns set. Nothing grows with how often a buyer asks.
 */

export type JoinOutcome =
  | { kind: 'joined'; place: QueuePlace; isNew: boolean }
  | { kind: 'sale_not_found' }
  | { kind: 'sale_ended' }
  | { kind: 'sale_not_queued' }
  | { kind: 'queue_not_open'; opensAt: number }
  | { kind: 'queue_full'; cap: number }
  | { kind: 'solution_replayed' };

/** A solved challenge the gateway verified: its id (the signature) and when its challenge expires (epoch ms). */
export interface JoinSolution {
  id: string;
  expiresAt: number;
}

/** A draw for a pre-start joiner: uniform over [0, 2^52), from the operating system's CSPRNG. */
export function newDraw(): number {
  // randomInt takes a range below 2^48: two draws make the 52 bits.
  return randomInt(2 ** 26) * 2 ** 26 + randomInt(2 ** 26);
}

/**
 * Joins the queue, or finds the buyer there. With `provenScore` (the score a signed ticket of a door Redis
 * lost proves), a buyer missing from the queue comes back at that place (join-queue-6.lua says when not).
 * With `solution`, a new joiner's solved challenge is taken once (a second use is `solution_replayed`).
 */
export async function joinQueue(
  { redis, keys }: SaleRef,
  userId: string,
  draw: number = newDraw(),
  provenScore?: number,
  solution?: JoinSolution,
): Promise<JoinOutcome> {
  if (!(draw >= 0 && draw < ARRIVAL_SCORE_BASE && Number.isInteger(draw)))
    throw new Error(`a draw must be an integer in [0, 2^52), not ${draw}`);
  if (provenScore !== undefined && !(provenScore >= 0 && Number.isSafeInteger(provenScore)))
    throw new Error(`a proven score must be a safe integer, not ${provenScore}`);
  const reply = await redis.joinQueue(
    keys.meta,
    keys.queue,
    keys.door,
    keys.turns,
    keys.buyers,
    keys.pow,
    userId,
    String(draw),
    provenScore === undefined ? '' : String(provenScore),
    solution?.id ?? '',
    solution === undefined ? '' : String(solution.expiresAt),
  );
  const [code, a, b, c] = reply.map(Number);
  switch (code) {
    case 1:
      return { kind: 'joined', place: { score: a!, rank: b! < 0 ? null : b! }, isNew: c === 1 };
    case -1:
      return { kind: 'sale_not_found' };
    case -2:
      return { kind: 'sale_ended' };
    case -9:
      return { kind: 'sale_not_queued' };
    case -10:
      return { kind: 'queue_not_open', opensAt: a! };
    case -11:
      return { kind: 'queue_full', cap: a! };
    case -12:
      return { kind: 'solution_replayed' };
    default:
      throw new Error(`join-queue script returned an unknown code ${code}`);
  }
}

export type DoorReading = { kind: 'door'; door: DoorView } | { kind: 'sale_not_found' } | { kind: 'sale_not_queued' };

/**
 * Moves the door on (admitting whoever the rate and the stock bound allow) and reads it; with `change`,
 * then sets the admit rate or the door's pause (after moving on at the old setting).
 */
export async function admitQueue(
  { redis, keys, saleId }: SaleRef,
  change: { admitPerSecond?: number; paused?: boolean } = {},
): Promise<DoorReading> {
  const reply = await redis.admitQueue(
    keys.meta,
    keys.queue,
    keys.turns,
    keys.door,
    keys.paid,
    keys.showUp,
    change.admitPerSecond === undefined ? '' : String(change.admitPerSecond),
    change.paused === undefined ? '' : change.paused ? '1' : '0',
  );
  const code = Number(reply[0]);
  if (code === -1) return { kind: 'sale_not_found' };
  if (code === -9) return { kind: 'sale_not_queued' };
  if (code !== 1) throw new Error(`admit-queue script returned an unknown code ${code}`);
  const [
    now,
    startsAt,
    endsAt,
    preQueueSeconds,
    front,
    queued,
    unused,
    remaining,
    mayComeBack,
    abandoned,
    rate,
    ttl,
    factor,
    doorPaused,
    salePaused,
    epoch,
    restoringUntil,
  ] = reply.slice(1, 18).map<number>(Number);
  const [showUp, challenge, challengeMax, claim, cap] = reply.slice(18, 23).map(String);
  const [awaitingShowUp, noShowRate, room, nextOverdueAt] = reply.slice(23, 27).map<number>(Number);
  const guards = doorGuardsOf({
    q_ttl: String(ttl),
    q_show: showUp,
    q_pow: challenge,
    q_pow_max: challengeMax,
    q_claim: claim,
    q_max: cap,
  });
  return {
    kind: 'door',
    door: {
      saleId,
      now: now!,
      startsAt: startsAt!,
      endsAt: endsAt!,
      opensAt: startsAt! - preQueueSeconds! * 1000,
      front: front!,
      queued: queued!,
      unused: unused!,
      remaining: remaining!,
      mayComeBack: mayComeBack!,
      abandoned: abandoned!,
      admitPerSecond: rate!,
      admissionTtlSeconds: ttl!,
      noShowFactor: factor!,
      doorPaused: doorPaused === 1,
      salePaused: salePaused === 1,
      epoch: epoch!,
      restoringUntil: restoringUntil!,
      awaitingShowUp: awaitingShowUp!,
      noShowRate: noShowRate!,
      room: room!,
      nextOverdueAt: nextOverdueAt!,
      ...guards,
    },
  };
}

export type PlaceReading =
  { kind: 'place'; place: QueuePlace; front: number } | { kind: 'not_joined' } | { kind: 'sale_not_found' } | { kind: 'sale_not_queued' };

/** One buyer's place, rank (once drawn) and turn, as Redis holds them now. */
export async function readQueuePlace({ redis, keys }: SaleRef, userId: string): Promise<PlaceReading> {
  const reply = await redis.queuePlace(keys.meta, keys.queue, keys.turns, keys.door, userId);
  const code = Number(reply[0]);
  if (code === -1) return { kind: 'sale_not_found' };
  if (code === -9) return { kind: 'sale_not_queued' };
  if (code === 0) return { kind: 'not_joined' };
  const [score, rank, turn, front] = reply.slice(1);
  return {
    kind: 'place',
    place: { score: Number(score), rank: Number(rank) < 0 ? null : Number(rank), turn: turn === '' || turn === null ? null : Number(turn) },
    front: Number(front),
  };
}

export type ShowUpOutcome = { kind: 'shown'; turn: number | null } | { kind: 'sale_not_found' } | { kind: 'sale_not_queued' };

/**
 * The buyer shows up for their turn (show-up-3.lua): a turn in its show-up window runs to its full end
 * from now on. Answers the turn as the turns set holds it after (null: none).
 */
export async function showUp({ redis, keys }: SaleRef, userId: string): Promise<ShowUpOutcome> {
  const [code, turn] = await redis.showUp(keys.meta, keys.turns, keys.showUp, userId);
  if (Number(code) === -1) return { kind: 'sale_not_found' };
  if (Number(code) === -9) return { kind: 'sale_not_queued' };
  return { kind: 'shown', turn: turn === '' || turn === undefined ? null : Number(turn) };
}

/**
 * Records a paid order of a queued sale (idempotent; nothing for an open sale): its units will never come
 * back, which is how the door learns that nothing can (and tells the crowd `sold_out`).
 */
export async function recordPaid({ redis, keys }: SaleRef, reservationId: string, units: number): Promise<void> {
  await redis.recordPaid(keys.meta, keys.paid, reservationId, units);
}

/** A door's figures for the operator (metrics, dashboard), read without moving it. */
export interface DoorGauges {
  /** Buyers in the queue the frontier has not reached. */
  waiting: number;
  /** Admitted buyers whose turn runs and who have not bought. */
  unused: number;
  /** The frontier: ranks given a turn so far. */
  front: number;
  /** Turns that ended unused (counted when the door next moved). */
  abandoned: number;
  /** Admitted buyers whose turn runs in its show-up window (they have not shown up yet). */
  awaitingShowUp: number;
  /** The no-show rate of recent turns the door admits ahead of, as its last move measured it (0..0.9). */
  noShowRate: number;
  /**
   * Admissions the stock bound allows now, at least 0: floor(remaining x factor) - unused, with the turns
   * in their show-up window counted (1 - noShowRate) each (admit-queue-6.lua; counting none as overdue,
   * which only the door's own move does: at most the door's room).
   */
  room: number;
  admitPerSecond: number;
  /** The operator's pause of the door. */
  doorPaused: boolean;
  /** Whether the door may admit now: started, not ended, neither it nor the sale paused, not restoring. */
  open: boolean;
}

/**
 * Reads a queued sale's door at Redis's time `at` (a snapshot's; without it, Redis's now, read first for
 * a queued sale only: an open sale costs one HGET): one MULTI of reads, no script, so the reconciler's
 * look and the dashboard cost the door nothing and never move it. Null when the sale has no door (open,
 * or not in Redis).
 */
export async function readDoorGauges(sale: SaleRef, at?: number): Promise<DoorGauges | null> {
  const { redis, keys } = sale;
  if (at === undefined) {
    if ((await redis.hget(keys.meta, 'adm')) !== '1') return null;
    return readDoorGauges(sale, await redisNow(redis, keys.meta));
  }
  const replies = await redis
    .multi()
    .hmget(keys.meta, 'adm', 'starts', 'ends', 'remaining', 'q_rate', 'q_factor', 'q_paused', 'paused', 'op_paused')
    .hmget(keys.door, 'front', 'abandoned', 'restoring_until', 'no_show_rate')
    .zcard(keys.queue)
    .zcount(keys.turns, `(${at}`, '+inf')
    .zcard(keys.showUp)
    .exec();
  if (!replies) throw new Error('door reading transaction was discarded');
  for (const [error] of replies) if (error) throw error;
  const [adm, starts, ends, remaining, rate, factor, doorPaused, paused, operatorPaused] = replies[0]![1] as (string | null)[];
  if (adm !== '1') return null;
  const [front, abandoned, restoringUntil, noShowRate] = (replies[1]![1] as (string | null)[]).map((v) => Number(v ?? 0));
  const queued = Number(replies[2]![1]);
  const unused = Number(replies[3]![1]);
  const awaitingShowUp = Math.min(unused, Number(replies[4]![1]));
  return {
    waiting: Math.max(0, queued - front!),
    unused,
    front: front!,
    abandoned: abandoned!,
    awaitingShowUp,
    noShowRate: noShowRate!,
    // Every turn in its window counted as fresh (none overdue): at most the room the door itself sees.
    room: Math.max(0, admissionRoom(Number(remaining), Number(factor), unused, awaitingShowUp, 0, noShowRate!)),
    admitPerSecond: Number(rate),
    doorPaused: doorPaused === '1',
    open:
      at >= Number(starts) && at < Number(ends) && at >= restoringUntil! && doorPaused !== '1' && paused !== '1' && operatorPaused !== '1',
  };
}
