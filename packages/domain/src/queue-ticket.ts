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
 * lost, and proves the buyer's place in it (the gateway puts them back there: join-queue-6.lua).
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
  const body = [
    VERSION,
    ticket.saleId,
    Buffer.from(ticket.userId, 'utf8').toString('base64url'),
    ticket.score,
    ticket.rank ?? '-',
    ticket.epoch,
  ].join('.');
  return `${body}.${signatureOf(key, body)}`;
}

/** The ticket if it is well formed and signed with `key`, whoever's it is; else why not. */
function verifiedTicket(key: KeyObject, raw: string): QueueTicket | 'malformed' | 'bad_signature' {
  const parts = raw.split('.');
  if (parts.length !== 7 || parts[0] !== VERSION) return 'malformed';
  const [, sale, user, score, rank, epoch, signature] = parts as [string, string, string, string, string, string, string];
  if (!INTEGER.test(sale) || !INTEGER.test(score) || (rank !== '-' && !INTEGER.test(rank)) || !INTEGER.test(epoch)) return 'malformed';
  const expectedSignature = Buffer.from(signatureOf(key, parts.slice(0, 6).join('.')));
  const given = Buffer.from(signature);
  if (given.length !== expectedSignature.length || !timingSafeEqual(given, expectedSignature)) return 'bad_signature';
  return {
    saleId: Number(sale),
    userId: Buffer.from(user, 'base64url').toString('utf8'),
    score: Number(score),
    rank: rank === '-' ? null : Number(rank),
    epoch: Number(epoch),
  };
}

const ofBuyer = (ticket: QueueTicket, expected: { saleId: number; userId: string }): QueueTicket | TicketProblem =>
  ticket.saleId !== expected.saleId ? 'other_sale' : ticket.userId !== expected.userId ? 'other_buyer' : ticket;

/** The ticket if it is well formed, signed with `key`, and this buyer's for this sale; else why not. */
export function readQueueTicket(key: KeyObject, raw: string, expected: { saleId: number; userId: string }): QueueTicket | TicketProblem {
  const ticket = verifiedTicket(key, raw);
  return typeof ticket === 'string' ? ticket : ofBuyer(ticket, expected);
}

/** Reads tickets as `readQueueTicket` does (the same answers), remembering the ones whose signature held. */
export type QueueTicketReader = (raw: string, expected: { saleId: number; userId: string }) => QueueTicket | TicketProblem;

/**
 * `readQueueTicket` for a gateway's waiting crowd: each waiting buyer sends the same ticket poll after poll
 * (the door answers it back unchanged while their place does not move), so a ticket whose signature held
 * is remembered, by its whole text, and not checked again: the HMAC, its buffers and the parsing were most
 * of a poll's cost left in the profile. Only tickets this key signed are kept, and whose they are is still
 * checked on every read. At most `capacity` are kept (about 250 bytes each); when full, the memory is
 * emptied and fills again with the tickets polled since, so a crowd larger than it costs the HMAC again,
 * never more memory.
 */
export function createQueueTicketReader(key: KeyObject, capacity = 20_000): QueueTicketReader {
  const verified = new Map<string, QueueTicket>();
  return (raw, expected) => {
    let ticket = verified.get(raw);
    if (ticket === undefined) {
      const read = verifiedTicket(key, raw);
      if (typeof read === 'string') return read;
      if (verified.size >= capacity) verified.clear();
      verified.set(raw, (ticket = read));
    }
    return ofBuyer(ticket, expected);
  };
}
