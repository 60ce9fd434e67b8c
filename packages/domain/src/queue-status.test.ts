import { describe, expect, it } from 'vitest';
import { queueAnswer, type DoorView } from './queue-status.ts';
import { doorGuardsOff } from './door-terms.ts';
import { createQueueTicketReader, queueTicketKey, readQueueTicket, signQueueTicket } from './queue-ticket.ts';

const T0 = Date.UTC(2026, 10, 25, 12);
const door = (over: Partial<DoorView> = {}): DoorView => ({
  saleId: 7,
  now: T0,
  startsAt: T0,
  endsAt: T0 + 3_600_000,
  opensAt: T0 - 600_000,
  front: 10,
  queued: 100,
  unused: 2,
  remaining: 50,
  mayComeBack: 0,
  abandoned: 0,
  admitPerSecond: 4,
  admissionTtlSeconds: 60,
  noShowFactor: 1,
  doorPaused: false,
  salePaused: false,
  epoch: T0 - 900_000,
  restoringUntil: 0,
  awaitingShowUp: 0,
  noShowRate: 0,
  room: 48,
  nextOverdueAt: 0,
  ...doorGuardsOff(60),
  ...over,
});

describe('queueAnswer', () => {
  it('waiting after the draw: position 1 is next, ETA at the door pace, asked back halfway', () => {
    expect(queueAnswer(door(), { score: 1, rank: 29 }, T0)).toEqual({
      state: 'waiting',
      position: 20,
      ahead: 19,
      etaSeconds: 5,
      admittedUntil: null,
      retryAfterSeconds: 3,
    });
    expect(queueAnswer(door(), { score: 1, rank: 10 }, T0)).toMatchObject({ position: 1, ahead: 0, etaSeconds: 1, retryAfterSeconds: 1 });
  });

  it('no ETA while a door begun again after a loss waits for its crowd to come back', () => {
    expect(queueAnswer(door({ restoringUntil: T0 + 20_000 }), { score: 1, rank: 29 }, T0)).toMatchObject({
      state: 'waiting',
      position: 20,
      etaSeconds: null,
      retryAfterSeconds: 5,
    });
  });

  it('waiting before the draw: no place, the ETA is the start, Retry-After up to 30 s', () => {
    expect(queueAnswer(door({ startsAt: T0 + 20_000, front: 0 }), { score: 5, rank: null }, T0)).toEqual({
      state: 'waiting',
      position: null,
      ahead: null,
      etaSeconds: 20,
      admittedUntil: null,
      retryAfterSeconds: 20,
    });
    expect(queueAnswer(door({ startsAt: T0 + 300_000, front: 0 }), { score: 5, rank: null }, T0).retryAfterSeconds).toBe(30);
  });

  it('no ETA while nothing moves the door: paused, the sale paused, or held by the stock bound', () => {
    for (const held of [
      door({ doorPaused: true }),
      door({ salePaused: true }),
      door({ unused: 50, room: 0 }),
      door({ remaining: 0, mayComeBack: 3, unused: 0, room: 0 }),
    ]) {
      expect(queueAnswer(held, { score: 1, rank: 20 }, T0)).toMatchObject({
        state: 'waiting',
        position: 11,
        etaSeconds: null,
        retryAfterSeconds: 5,
      });
    }
  });

  it('held by the stock with a turn about to be overdue: asked back when it is (the door may move then), never later than 5 s', () => {
    const held = door({ unused: 50, room: 0 });
    expect(queueAnswer({ ...held, nextOverdueAt: T0 + 2300 }, { score: 1, rank: 20 }, T0)).toMatchObject({
      state: 'waiting',
      etaSeconds: null,
      retryAfterSeconds: 3,
    });
    expect(queueAnswer({ ...held, nextOverdueAt: T0 + 20_000 }, { score: 1, rank: 20 }, T0)).toMatchObject({ retryAfterSeconds: 5 });
    expect(queueAnswer({ ...held, nextOverdueAt: T0 + 2300, doorPaused: true }, { score: 1, rank: 20 }, T0)).toMatchObject({
      retryAfterSeconds: 5,
    });
  });

  it('admitted while the turn runs (Retry-After its end); used once a purchase used it, whatever became of the order; expired once it ran out', () => {
    expect(queueAnswer(door(), { score: 1, rank: 3, turn: T0 + 42_500 }, T0)).toEqual({
      state: 'admitted',
      position: null,
      ahead: null,
      etaSeconds: null,
      admittedUntil: T0 + 42_500,
      retryAfterSeconds: 30,
    });
    expect(queueAnswer(door(), { score: 1, rank: 3, turn: -(T0 + 1000) }, T0 + 5000)).toEqual({
      state: 'used',
      position: null,
      ahead: null,
      etaSeconds: null,
      admittedUntil: null,
      retryAfterSeconds: 3600,
    });
    expect(queueAnswer(door(), { score: 1, rank: 3, turn: 0 }, T0)).toMatchObject({
      state: 'expired',
      admittedUntil: null,
      retryAfterSeconds: 3600,
    });
    expect(queueAnswer(door(), { score: 1, rank: 3, turn: T0 - 1 }, T0)).toMatchObject({ state: 'expired' });
  });

  it('never a final state for a rank the frontier passed with no turn the door knows of (a store went back): waiting, asked back in 2 s', () => {
    expect(queueAnswer(door(), { score: 1, rank: 3, turn: null }, T0)).toEqual({
      state: 'waiting',
      position: null,
      ahead: null,
      etaSeconds: null,
      admittedUntil: null,
      retryAfterSeconds: 2,
    });
  });

  it('sold_out for everyone waiting once nothing is left and nothing can come back; ended over all; not_joined', () => {
    expect(queueAnswer(door({ remaining: 0, mayComeBack: 0 }), { score: 1, rank: 20 }, T0)).toMatchObject({
      state: 'sold_out',
      position: null,
      retryAfterSeconds: 30,
    });
    expect(queueAnswer(door(), { score: 1, rank: 20 }, T0 + 3_600_000)).toMatchObject({ state: 'ended' });
    expect(queueAnswer(door(), null, T0)).toMatchObject({ state: 'not_joined', retryAfterSeconds: 1 });
    expect(queueAnswer(door({ opensAt: T0 + 12_000 }), null, T0)).toMatchObject({ state: 'not_joined', retryAfterSeconds: 12 });
  });
});

describe('queue tickets', () => {
  const key = queueTicketKey('a-secret-of-at-least-thirty-two-characters');
  const ticket = { saleId: 7, userId: 'ünïcode buyer.with.dots', score: 2 ** 52 + 3, rank: 12, epoch: T0 - 900_000 };

  it('reads back what was signed, for its buyer and sale only', () => {
    const raw = signQueueTicket(key, ticket);
    expect(readQueueTicket(key, raw, { saleId: 7, userId: ticket.userId })).toEqual(ticket);
    expect(readQueueTicket(key, signQueueTicket(key, { ...ticket, rank: null }), { saleId: 7, userId: ticket.userId })).toEqual({
      ...ticket,
      rank: null,
    });
    expect(readQueueTicket(key, raw, { saleId: 7, userId: 'someone else' })).toBe('other_buyer');
    expect(readQueueTicket(key, raw, { saleId: 8, userId: ticket.userId })).toBe('other_sale');
  });

  it('refuses an altered field, another key, and anything malformed', () => {
    const parts = signQueueTicket(key, ticket).split('.');
    const altered = [...parts];
    altered[4] = '0';
    expect(readQueueTicket(key, altered.join('.'), { saleId: 7, userId: ticket.userId })).toBe('bad_signature');
    const otherEpoch = [...parts];
    otherEpoch[5] = String(T0);
    expect(readQueueTicket(key, otherEpoch.join('.'), { saleId: 7, userId: ticket.userId })).toBe('bad_signature');
    expect(
      readQueueTicket(queueTicketKey('another-secret-of-at-least-thirty-two-chars'), parts.join('.'), { saleId: 7, userId: ticket.userId }),
    ).toBe('bad_signature');
    for (const raw of [
      '',
      'q2',
      'q1.7.eA.1.-.sig',
      'q2.7.x.1.-.sig',
      'q2.07.eA.1.-.5.sig',
      'q2.7.eA.-1.-.5.sig',
      'q2.7.eA.1.1.x.sig',
      'q2.7.eA.1.1.5.5.sig',
    ]) {
      expect(readQueueTicket(key, raw, { saleId: 7, userId: 'x' })).toBe('malformed');
    }
  });

  it("answers what readQueueTicket answers, ticket after ticket and again, past the reader's capacity", () => {
    const read = createQueueTicketReader(key, 2);
    const altered = signQueueTicket(key, ticket).split('.');
    altered[3] = '1';
    const asks: [string, { saleId: number; userId: string }][] = [
      ...[0, 1, 2, 3].map(
        (rank) =>
          [signQueueTicket(key, { ...ticket, rank }), { saleId: 7, userId: ticket.userId }] as [string, { saleId: number; userId: string }],
      ),
      [signQueueTicket(key, ticket), { saleId: 7, userId: 'someone else' }],
      [signQueueTicket(key, ticket), { saleId: 8, userId: ticket.userId }],
      [altered.join('.'), { saleId: 7, userId: ticket.userId }],
      ['q2.7.eA.1.-.sig', { saleId: 7, userId: 'x' }],
    ];

    for (const [raw, expected] of [...asks, ...asks, ...asks.reverse()])
      expect(read(raw, expected)).toEqual(readQueueTicket(key, raw, expected));
  });
});
