import {
  AppError,
  ARRIVAL_SCORE_BASE,
  queueAnswer,
  createQueueTicketReader,
  queueTicketKey,
  signQueueTicket,
  turnNeedsLookup,
  type DoorView,
  type DoorTerms,
  type QueueAnswer,
  type QueuePlace,
  type QueueTicket,
} from '@flashsale/domain';
import type { JoinOutcome } from '@flashsale/redis-store';
import type { SaleRecord } from '@flashsale/order-store';
import type { SalesDeps } from './sales-deps.ts';
import { findSaleUnlessMissing, type SaleMisses } from './sale-misses.ts';
import type { DoorFrontiers } from './door-frontier.ts';
import { challengeDifficulty, createDoorChallenges, type SolvedChallenge } from './door-challenge.ts';
import { JoinRates } from './join-rates.ts';
import { SetAside, type SetAsideReason } from './set-aside.ts';
import type { Challenge } from 'altcha-lib/v1/types';

/**
 * The door's use cases: joining a sale's waiting room, a buyer's place in it, the operator's
 * control of it, and telling it of paid units. The admission itself, and the purchase check, are in
 * Redis scripts (admit-queue-6.lua, reserve.lua); these put the two stores and the ticket together.
 *
 * Crash points: a join is one script call (joined or not); a status reads only. The operator's change is
 * MySQL first (the record a rebuild writes back), then Redis; dying between, Redis keeps the old setting
 * until the change is sent again (idempotent) or the sale is rebuilt. A paid order is recorded in Redis
 * after MySQL commits it; dying between (or Redis failing then: the payment is answered all the same)
 * leaves Redis thinking those units may come back, which only delays the crowd's `sold_out` (never admits
 * anyone more); a replay of the event records it again.
 *
 * Redis losing the door (a flush, a failover to a replica behind): the reconciler rebuilds the sale and
 * begins a new door (a new epoch) that admits nobody for DOOR_RESTORE_GRACE_MS. A buyer whose ticket is
 * of an earlier epoch is put back at the place it proves, at their first ask (join-queue-6.lua).
 */
export interface DoorDeps extends SalesDeps {
  /** The buyer-token secret, from which the ticket key is derived. */
  authSecret: string;
  frontiers: DoorFrontiers;
  /** Ids MySQL was found to hold no sale of, remembered briefly (a queue polled for an unknown id). */
  misses?: SaleMisses;
  /** The buyer-token claim by which the shop's identity system flags an account (true: set aside). */
  flagClaim?: string;
  /** Told of every join answered from the shadow queue, with why (metrics). */
  onShadowJoin?: (reason: SetAsideReason) => void;
}

export interface QueueReply {
  saleId: number;
  answer: QueueAnswer;
  /** The buyer's signed ticket (send it back as the Queue-Ticket header), null when not in the queue. */
  ticket: string | null;
}

/** What a join brings besides the buyer: their ticket, their solved challenge, their token's claims. */
export interface JoinRequest {
  /** The buyer's ticket: with one of a door Redis lost, they come back at the place it proves (no challenge asked). */
  ticket?: string;
  /** An ALTCHA payload solving a challenge of GET .../queue/challenge (where the sale asks one). */
  solution?: string;
  /** The buyer token's claims (its signature checked by the gateway), for the sale's requireClaim. */
  claims?: Record<string, unknown>;
}

export interface Door {
  join(saleId: number, userId: string, request?: JoinRequest): Promise<QueueReply>;
  /** A proof-of-work challenge bound to this buyer and sale, at the sale's difficulty now (ALTCHA's format). */
  challenge(saleId: number, userId: string): Promise<Challenge>;
  /**
   * A join the gateway refused past the buyer's budget: a strike against the account; once it is set
   * aside, the join is answered from the shadow queue (else null, and the gateway refuses it 429).
   */
  flooded(saleId: number, userId: string): Promise<QueueReply | null>;
  status(saleId: number, userId: string, rawTicket: string | undefined): Promise<QueueReply>;
  /**
   * The buyer shows up for their turn (POST .../queue/here with their ticket): a turn in its show-up
   * window (showUpSeconds) runs its full admissionTtlSeconds from the admission on; then answers their
   * state as a status does. A buyer whose turn has not come, or ran out, is only answered.
   */
  here(saleId: number, userId: string, rawTicket: string | undefined): Promise<QueueReply>;
  changeAdmission(saleId: number, change: { admitPerSecond?: number; paused?: boolean }): Promise<{ sale: SaleRecord; door: DoorView }>;
  /** After a payment was recorded in MySQL: the order's units can never come back (queued sales only). */
  paid(saleId: number, reservationId: string): Promise<void>;
  /** The joins of `saleId` this gateway process answered from the shadow queue, by reason (the dashboard). */
  shadowJoins(saleId: number): Record<SetAsideReason, number>;
}

export function createDoor(deps: DoorDeps): Door {
  const { redis, mysql, frontiers } = deps;
  const ticketKey = queueTicketKey(deps.authSecret);
  const readQueueTicket = createQueueTicketReader(ticketKey);
  const challenges = createDoorChallenges(deps.authSecret);
  const joinRates = new JoinRates();
  // The shadow queue's tickets: the same form, signed with a key of their own, so only the gateway tells them apart.
  const shadowKey = queueTicketKey(`${deps.authSecret}\u0000shadow queue`);
  const readShadowTicket = createQueueTicketReader(shadowKey);
  const setAside = new SetAside();
  // Per sale, only of sales that exist (counted once the answer is made): ids a client makes up add nothing.
  const shadowTally = new Map<number, Record<SetAsideReason, number>>();
  const flagClaim = deps.flagClaim ?? 'flagged';

  // Not in Redis: no such sale, or Redis lost it and the reconciler is rebuilding it from MySQL.
  async function missing(saleId: number): Promise<never> {
    if (await findSaleUnlessMissing(mysql, deps.misses, saleId))
      throw new AppError('SALE_PAUSED', { because: 'restoring' }, {}, { 'Retry-After': '2' });
    throw new AppError('SALE_NOT_FOUND', { saleId });
  }

  async function doorOf(saleId: number, refresh = false): Promise<{ door: DoorView; now: number }> {
    const { reading, now } = await frontiers.read(saleId, refresh);
    if (reading.kind === 'sale_not_found') return missing(saleId);
    if (reading.kind === 'sale_not_queued') throw new AppError('SALE_NOT_QUEUED', { saleId });
    return { door: reading.door, now };
  }

  function readTicket(saleId: number, userId: string, rawTicket: string): QueueTicket & { shadow?: true } {
    let ticket = readQueueTicket(rawTicket, { saleId, userId });
    if (typeof ticket !== 'string') return ticket;
    if (ticket === 'bad_signature') {
      const shadow = readShadowTicket(rawTicket, { saleId, userId });
      if (typeof shadow !== 'string') return { ...shadow, shadow: true };
      ticket = shadow === 'bad_signature' ? ticket : shadow;
    }
    throw new AppError('INVALID_QUEUE_TICKET', { because: ticket });
  }

  async function joined(saleId: number, outcome: JoinOutcome): Promise<QueuePlace> {
    switch (outcome.kind) {
      case 'queue_full':
        throw new AppError(
          'QUEUE_FULL',
          { saleId, maxQueueSize: outcome.cap },
          {
            maxQueueSize: outcome.cap,
          },
        );
      case 'solution_replayed':
        throw new AppError('CHALLENGE_REQUIRED', { because: 'replayed', saleId });
      case 'sale_not_found':
        return missing(saleId);
      case 'sale_ended':
        throw new AppError('SALE_ENDED', { saleId });
      case 'sale_not_queued':
        throw new AppError('SALE_NOT_QUEUED', { saleId });
      case 'queue_not_open': {
        const opensAt = new Date(outcome.opensAt).toISOString();
        throw new AppError('QUEUE_NOT_OPEN', { opensAt }, { opensAt });
      }
      case 'joined':
        return outcome.place;
    }
  }

  // `placedNow`: `known` is what the join script just answered, newer than any copy of the door.
  async function reply(
    saleId: number,
    userId: string,
    known: QueuePlace | null,
    askRedis: boolean,
    ticket?: QueueTicket,
    rawTicket?: string,
    placedNow = false,
  ): Promise<QueueReply> {
    const cached = await doorOf(saleId);
    let now = cached.now;
    let door = cached.door;
    let place = known;
    let lookUp = askRedis;
    if (ticket && ticket.epoch !== door.epoch) {
      // A ticket of a door Redis lost: the buyer comes back at the place it proves (or is found there),
      // then their turn is read (used, if they bought before the loss). Once per buyer per loss.
      await joined(saleId, await redis.sale(saleId).joinQueue(userId, undefined, ticket.score));
      lookUp = true;
    }
    // A rank beyond the queue Redis holds: Redis went back (a failover to a replica behind) and the place
    // must be looked up (the queue only grows otherwise). Unless this gateway's copy of the door is older
    // than the ticket (buyers joined since it was read): the copy is read again first, one call shared by
    // every buyer asking meanwhile, and only a rank beyond that reading is looked up.
    let beyondQueue = !placedNow && place?.rank != null && place.rank >= door.queued;
    if (beyondQueue) {
      const again = await doorOf(saleId, true);
      door = again.door;
      now = again.now;
      beyondQueue = place!.rank! >= door.queued;
    }
    if (lookUp || beyondQueue || (place !== null && ((place.rank === null && now >= door.startsAt) || turnNeedsLookup(door, place.rank)))) {
      let read = await redis.sale(saleId).queuePlace(userId);
      if (read.kind === 'not_joined' && ticket) {
        // Missing from a door that was not lost, only set back: the ticket still proves the place.
        await joined(saleId, await redis.sale(saleId).joinQueue(userId, undefined, ticket.score));
        read = await redis.sale(saleId).queuePlace(userId);
      }
      if (read.kind === 'sale_not_found') return missing(saleId);
      if (read.kind === 'sale_not_queued') throw new AppError('SALE_NOT_QUEUED', { saleId });
      place = read.kind === 'place' ? read.place : null;
      // The place was read after the cached door: its front is the newer, lower too when Redis went back
      // (a replica behind promoted), so a rank is never judged against a frontier Redis no longer holds.
      if (read.kind === 'place') door = { ...door, front: read.front };
    }
    // A ticket says the same again (a waiting buyer's poll, most often): the one the buyer sent is that
    // ticket, signed (readQueueTicket checked it, and only what was signed passes), so it is not signed again.
    const unchanged =
      rawTicket !== undefined &&
      place !== null &&
      ticket!.score === place.score &&
      ticket!.rank === place.rank &&
      ticket!.epoch === door.epoch;
    const signed = place
      ? unchanged
        ? rawTicket
        : signQueueTicket(ticketKey, { saleId, userId, score: place.score, rank: place.rank, epoch: door.epoch })
      : null;
    return { saleId, answer: queueAnswer(door, place, now), ticket: signed };
  }

  /**
   * The shadow queue: an answer exactly like a waiting buyer's, from the copy of the door alone (no Redis
   * call, nothing written), with a place at the end of the line as it stands; as the frontier moves the
   * place moves with it, then holds a few places short of the front (the door held by its stock, as far
   * as the client can tell). Never admitted: the buyer is in no queue the reserve script knows.
   */
  async function shadowReply(saleId: number, userId: string, ticket: QueueTicket | null, rawTicket?: string): Promise<QueueReply> {
    const { door, now } = await doorOf(saleId);
    const started = now >= door.startsAt;
    const offset = 1 + ((ticket?.score ?? 0) % 17);
    let place: QueuePlace = ticket ?? {
      score: ARRIVAL_SCORE_BASE + door.queued + 1_000_000 + Math.floor(Math.random() * 1000),
      rank: null,
    };
    if (started && place.rank === null) place = { score: place.score, rank: door.queued + offset };
    const shown: QueuePlace =
      place.rank === null ? place : { score: place.score, rank: Math.max(place.rank, door.front + offset), turn: null };
    const unchanged = ticket !== null && ticket.rank === place.rank && ticket.epoch === door.epoch;
    const signed =
      unchanged && rawTicket !== undefined
        ? rawTicket
        : signQueueTicket(shadowKey, { saleId, userId, score: place.score, rank: place.rank, epoch: door.epoch });
    // Held short of the front: no ETA, as for a waiting buyer the stock holds back.
    const answer = queueAnswer(
      { ...door, unused: shown.rank !== null && place.rank! < door.front + offset ? Number.MAX_SAFE_INTEGER : door.unused },
      shown,
      now,
    );
    return { saleId, answer, ticket: signed };
  }

  async function shadowJoin(saleId: number, userId: string, reason: SetAsideReason): Promise<QueueReply> {
    const answer = await shadowReply(saleId, userId, null);
    deps.onShadowJoin?.(reason);
    const tally = shadowTally.get(saleId) ?? { flagged: 0, challenge: 0, flood: 0 };
    tally[reason] += 1;
    shadowTally.set(saleId, tally);
    return answer;
  }

  // The checks of a join the gateway makes from its copy of the door (no Redis call): the claim, then the
  // solved challenge, each refused with its own code. A ticket proves a place taken before: no challenge.
  async function admittedToJoin(
    door: DoorView,
    saleId: number,
    userId: string,
    request: JoinRequest,
    proven: boolean,
  ): Promise<SolvedChallenge | undefined> {
    if (door.requireClaim !== null && request.claims?.[door.requireClaim] !== true) {
      throw new AppError('CLAIM_REQUIRED', { claim: door.requireClaim }, { claim: door.requireClaim });
    }
    if (door.challenge === 'off' || proven) return undefined;
    if (request.solution === undefined) {
      throw new AppError('CHALLENGE_REQUIRED', { because: 'missing', saleId });
    }
    const solved = await challenges.verify(saleId, userId, request.solution);
    if (!solved) throw new AppError('CHALLENGE_REQUIRED', { because: 'not_solved' });
    return solved;
  }

  return {
    async join(saleId, userId, request = {}) {
      // A ticket's score is used only if the buyer is missing from the queue: Redis lost the door.
      const ticket = request.ticket === undefined ? undefined : readTicket(saleId, userId, request.ticket);
      if (ticket?.shadow) return shadowReply(saleId, userId, ticket, request.ticket);
      const { door, now } = await doorOf(saleId);
      joinRates.saw(door, now);
      if (request.claims?.[flagClaim] === true) return shadowJoin(saleId, userId, 'flagged');
      if (setAside.has(userId)) return shadowJoin(saleId, userId, 'challenge');
      let solved: SolvedChallenge | undefined;
      let outcome: JoinOutcome;
      try {
        solved = await admittedToJoin(door, saleId, userId, request, ticket !== undefined);
        outcome = await redis.sale(saleId).joinQueue(userId, undefined, ticket?.score, solved);
        if (outcome.kind === 'solution_replayed') await joined(saleId, outcome);
      } catch (error) {
        // Solutions missing, wrong or replayed again and again: the account is set aside (its third strike
        // within a minute is answered from the shadow queue, and every join after it).
        if (error instanceof AppError && error.code === 'CHALLENGE_REQUIRED' && setAside.strike(userId))
          return shadowJoin(saleId, userId, 'challenge');
        throw error;
      }
      return reply(saleId, userId, await joined(saleId, outcome), false, undefined, undefined, true);
    },

    async flooded(saleId, userId) {
      return setAside.strike(userId) ? shadowJoin(saleId, userId, 'flood') : null;
    },

    async challenge(saleId, userId) {
      const { door, now } = await doorOf(saleId);
      const maxnumber = challengeDifficulty(door.challenge, door.challengeMaxNumber, joinRates.saw(door, now), door.admitPerSecond);
      return challenges.issue(saleId, userId, maxnumber);
    },

    async status(saleId, userId, rawTicket) {
      // Without a ticket nothing proves a place: answered from the gateway's copy of the door alone, never
      // a Redis call (a flood of ticketless polls costs Redis nothing). A buyer who lost their ticket joins
      // again: the same place, and the ticket.
      if (rawTicket === undefined) return reply(saleId, userId, null, false);
      const ticket = readTicket(saleId, userId, rawTicket);
      if (ticket.shadow) return shadowReply(saleId, userId, ticket, rawTicket);
      return reply(saleId, userId, { score: ticket.score, rank: ticket.rank }, false, ticket, rawTicket);
    },

    async here(saleId, userId, rawTicket) {
      // The sale first (404, 409 for an open one), from the copy: then the ticket the call needs.
      const { door } = await doorOf(saleId);
      if (rawTicket === undefined) throw new AppError('INVALID_QUEUE_TICKET', { because: 'missing' });
      const ticket = readTicket(saleId, userId, rawTicket);
      if (ticket.shadow) return shadowReply(saleId, userId, ticket, rawTicket);
      // Only a rank the frontier reached can hold a turn: a buyer further back than this copy of the door
      // could be behind (a second's admissions: the most the door banks) costs no Redis call.
      const reachable = ticket.rank !== null && ticket.rank < door.front + Math.ceil(door.admitPerSecond) + 1;
      if (!reachable || ticket.epoch !== door.epoch)
        return reply(saleId, userId, { score: ticket.score, rank: ticket.rank }, false, ticket, rawTicket);
      const shown = await redis.sale(saleId).showUp(userId);
      if (shown.kind === 'sale_not_found') return missing(saleId);
      if (shown.kind === 'sale_not_queued') throw new AppError('SALE_NOT_QUEUED', { saleId });
      return reply(saleId, userId, { score: ticket.score, rank: ticket.rank }, true, ticket, rawTicket);
    },

    async changeAdmission(saleId, change) {
      const inMysql = mysql.sale(saleId);
      const record = await inMysql.find();
      if (!record) throw new AppError('SALE_NOT_FOUND', { saleId });
      if (!record.admission) throw new AppError('SALE_NOT_QUEUED', { saleId });
      await inMysql.changeAdmission(change);
      const admission: DoorTerms = {
        ...record.admission,
        ...(change.admitPerSecond !== undefined && { admitPerSecond: change.admitPerSecond }),
        ...(change.paused !== undefined && { paused: change.paused }),
      };
      const reading = await frontiers.admit(saleId, change);
      if (reading.kind !== 'door') throw new AppError('SERVICE_UNAVAILABLE', { because: 'door_restoring' }, {}, { 'Retry-After': '2' });
      return { sale: { ...record, admission }, door: reading.door };
    },

    shadowJoins(saleId) {
      return { ...(shadowTally.get(saleId) ?? { flagged: 0, challenge: 0, flood: 0 }) };
    },

    async paid(saleId, reservationId) {
      // An open sale's payment pays one HGET for the door, and reads nothing more.
      if (!(await redis.sale(saleId).isQueued())) return;
      const order = await mysql.findOrderByReservation(reservationId);
      if (order?.status === 'paid') await redis.sale(order.saleId).recordPaid(reservationId, order.quantity);
    },
  };
}
