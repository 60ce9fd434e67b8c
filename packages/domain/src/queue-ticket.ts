import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * A buyer's queue ticket: who (buyer, sale), where (the queue score fixed at join: a draw before the
 * start, an arrival number after) and, once the draw has been made, the buyer's rank (0 = first in the
 * queue), signed with HMAC-SHA256. The gateway answers a waiting buyer's status poll from the ticket and
 * the door's frontier alone, without Redis; the signature means a buyer cannot move themselves forward
 * by editing it, and the draw it carries, handed to the buyer at join, is the commitment that the order
 * was fixed then: a position that does not follow from the draws is evidence against the shop.
 *
 * The ticket also names the door's epoch it was signed in: a ticket of an earlier epoch is of a door Redis
 * lost, and proves the buyer's place in it (the gateway puts them back there: join-queue-5.lua).
 *
 * Form: `q2.<saleId>.<base64url(userId)>.<score>.<rank or ->.<epoch>.<base64url(signature)>`.
 */
export interface QueueTicket {
  saleId: number;
  userId: string;
  score: number;
  /** Rank in the queue (0-based), known once the draw at startsAt has been made; null before. */
  rank: number | null;
  /** The door's epoch (DoorView.epoch) when the ticket was signed. */
  epoch: number;
}

const VERSION = 'q2';
const INTEGER = /^(0|[1-9][0-9]{0,15})$/;

export type TicketProblem = 'malformed' | 'bad_signature' | 'other_buyer' | 'other_sale';

/**
 * The signing key of queue tickets, derived from the buyer-token secret so no new secret is needed. A
 * KeyObject made once: handed a Buffer, createHmac builds one per call, which cost a waiting buyer's poll
 * (a verification, and a signature when the ticket changes) about 30 us per HMAC in the profile, against 6.
 */
export function queueTicketKey(authSecret: string): KeyObject {
  return createSecretKey(createHmac('sha256', authSecret).update('flashsale queue ticket v1').digest());
}

const signatureOf = (key: KeyObject, body: string): string => createHmac('sha256', key).update(body).digest('base64url');

export function signQueueTicket(key: KeyObject, ticket: QueueTicket): string {
  const body = [VERSION, ticket.saleId, Buffer.from(ticket.userId, 'utf8').toString('base64url'), ticket.score, ticket.rank ?? '-', ticket.epoch].join('.');
  return `${body}.${signatureOf(key, body)}`;
}

/** The ticket if it is well formed, signed with `key`, and this buyer's for this sale; else why not. */
export function readQueueTicket(key: KeyObject, raw: string, expected: { saleId: number; userId: string }): QueueTicket | TicketProblem {
  const parts = raw.split('.');
  if (parts.length !== 7 || parts[0] !== VERSION) return 'malformed';
  const [, sale, user, score, rank, epoch, signature] = parts as [string, string, string, string, string, string, string];
  if (!INTEGER.test(sale) || !INTEGER.test(score) || (rank !== '-' && !INTEGER.test(rank)) || !INTEGER.test(epoch)) return 'malformed';
  const expectedSignature = Buffer.from(signatureOf(key, parts.slice(0, 6).join('.')));
  const given = Buffer.from(signature);
  if (given.length !== expectedSignature.length || !timingSafeEqual(given, expectedSignature)) return 'bad_signature';
  const ticket = { saleId: Number(sale), userId: Buffer.from(user, 'base64url').toString('utf8'), score: Number(score), rank: rank === '-' ? null : Number(rank), epoch: Number(epoch) };
  if (ticket.saleId !== expected.saleId) return 'other_sale';
  if (ticket.userId !== expected.userId) return 'other_buyer';
  return ticket;
}
