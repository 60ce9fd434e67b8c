import { createHash } from 'node:crypto';

/** A proof-of-work challenge as GET /api/sales/:id/queue/challenge answers it (ALTCHA's format). */
export interface DoorChallenge {
  algorithm: string;
  challenge: string;
  salt: string;
  signature: string;
  maxnumber: number;
}

/**
 * Solves a door's challenge as a client that wants it fast does: ALTCHA's search (the number in
 * 0..maxnumber whose SHA-256 after the salt is the challenge) with node:crypto, synchronously, about a
 * microsecond a hash; altcha-lib's own solver awaits WebCrypto for every number, some thirty times slower,
 * which would make a demo's or a bench's joins the slow part. Answers the join's `solution`: base64 of
 * the JSON ALTCHA's clients send, and the number found (the hashes tried, less one).
 */
export function solveDoorChallenge(challenge: DoorChallenge): { solution: string; number: number } {
  if (challenge.algorithm !== 'SHA-256') throw new Error(`a door challenge of ${challenge.algorithm}: only SHA-256 is solved here`);
  for (let number = 0; number <= challenge.maxnumber; number++) {
    if (createHash('sha256').update(`${challenge.salt}${number}`).digest('hex') !== challenge.challenge) continue;
    const { algorithm, salt, signature } = challenge;
    return {
      solution: Buffer.from(JSON.stringify({ algorithm, challenge: challenge.challenge, number, salt, signature })).toString('base64'),
      number,
    };
  }
  throw new Error('a door challenge without a solution in 0..maxnumber');
}
