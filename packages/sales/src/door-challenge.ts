import { createHmac } from 'node:crypto';
import { createChallenge, extractParams, verifySolution } from 'altcha-lib/v1';
import type { Challenge, Payload } from 'altcha-lib/v1/types';
import { DOOR_TERMS_LIMITS } from '@flashsale/domain';

/**
 * The proof of work a queued sale may ask at join, against account farms: ALTCHA's classic challenge, made and
 * checked with `altcha-lib` (its `v1` format: SHA-256 of salt + a secret number below `maxnumber`, the
 * challenge signed with HMAC-SHA256), so any ALTCHA client (the widget, altcha-lib's solver, the buyer's
 * page) solves it. Stateless: nothing is stored when a challenge is made; the salt carries the sale, the
 * buyer and the expiry, all under the signature, so a solution is good for one buyer of one sale until
 * it expires. That it joins once is Redis's part (join-queue-6.lua remembers used ones until they expire).
 *
 * Why ALTCHA's library rather than our own: the format is a published one that browsers already solve
 * (WebCrypto, Web Workers), the server side is a few hashes, and the library has no dependencies.
 */

/** How long a challenge may be solved and used: a buyer solves it in about a second, then joins. */
export const CHALLENGE_TTL_MS = 300_000;
/** The longest ALTCHA payload taken (base64 of a small JSON object): anything larger is not one. */
const MAX_PAYLOAD_CHARS = 2048;

export interface SolvedChallenge {
  /** The challenge's signature: what makes one solution one. */
  id: string;
  /** When the challenge expires (epoch ms): remembered as used until then. */
  expiresAt: number;
}

export interface DoorChallenges {
  /** A challenge for `userId` in `saleId` at `maxnumber` (the difficulty), expiring CHALLENGE_TTL_MS from now. */
  issue(saleId: number, userId: string, maxnumber: number): Promise<Challenge>;
  /** The solved challenge if `payload` solves one of ours, unexpired, for this buyer and sale; else null. */
  verify(saleId: number, userId: string, payload: string): Promise<SolvedChallenge | null>;
}

export function createDoorChallenges(authSecret: string, now: () => number = Date.now): DoorChallenges {
  // Derived from the buyer-token secret (as the ticket key is), for its own use only.
  const hmacKey = createHmac('sha256', authSecret).update('flashsale door challenge v1').digest('hex');
  const buyerParam = (userId: string) => Buffer.from(userId, 'utf8').toString('base64url');
  return {
    issue(saleId, userId, maxnumber) {
      return createChallenge({
        hmacKey,
        maxnumber,
        expires: new Date(now() + CHALLENGE_TTL_MS),
        params: { sale: String(saleId), buyer: buyerParam(userId) },
      });
    },
    async verify(saleId, userId, payload) {
      if (payload.length > MAX_PAYLOAD_CHARS) return null;
      let decoded: Payload;
      try {
        decoded = JSON.parse(Buffer.from(payload, 'base64').toString('utf8')) as Payload;
      } catch {
        return null;
      }
      if (typeof decoded !== 'object' || decoded === null || typeof decoded.signature !== 'string' || typeof decoded.salt !== 'string')
        return null;
      const params = extractParams(decoded);
      if (params.sale !== String(saleId) || params.buyer !== buyerParam(userId)) return null;
      const expiresAt = Number(params.expires) * 1000;
      // altcha-lib checks the expiry on the machine's clock too; it is checked here on the same clock, so
      // a solution's remembered expiry is the one it was accepted against.
      if (!(expiresAt > now())) return null;
      let solved = false;
      try {
        solved = await verifySolution(decoded, hmacKey, true);
      } catch {
        return null;
      }
      return solved ? { id: decoded.signature, expiresAt } : null;
    },
  };
}

/**
 * The difficulty of a sale's challenge now: `pow` asks its own, `auto` raises it with the join rate, by
 * as many times as joins outpace admissions (from 1x while they do not, to 100x), so a farm that joins
 * faster than the door admits pays more per account the faster it joins, while a crowd joining at the
 * door's pace pays the base.
 */
export function challengeDifficulty(
  mode: 'off' | 'pow' | 'auto',
  maxNumber: number,
  joinsPerSecond: number,
  admitPerSecond: number,
): number {
  if (mode !== 'auto') return maxNumber;
  const pressure = Math.min(100, Math.max(1, joinsPerSecond / Math.max(admitPerSecond, 0.01)));
  return Math.min(DOOR_TERMS_LIMITS.challengeMaxNumber.max, Math.round(maxNumber * pressure));
}
