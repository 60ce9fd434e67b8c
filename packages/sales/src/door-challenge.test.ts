import { describe, expect, it } from 'vitest';
import { solveChallenge } from 'altcha-lib/v1';
import { CHALLENGE_TTL_MS, challengeDifficulty, createDoorChallenges } from './door-challenge.ts';

const SECRET = 'a-secret-of-at-least-thirty-two-characters';
const payloadOf = (challenge: { algorithm: string; challenge: string; salt: string; signature: string }, number: number) =>
  Buffer.from(
    JSON.stringify({
      algorithm: challenge.algorithm,
      challenge: challenge.challenge,
      number,
      salt: challenge.salt,
      signature: challenge.signature,
    }),
  ).toString('base64');

describe('the door challenge (ALTCHA, altcha-lib)', () => {
  it('verifies a solution of its own challenge for its buyer and sale only, until it expires', async () => {
    // altcha-lib checks the expiry on the machine's clock too: the test's clock starts at it.
    let now = Date.now();
    const challenges = createDoorChallenges(SECRET, () => now);
    const challenge = await challenges.issue(7, 'büyer.one', 2000);
    expect(challenge).toMatchObject({ algorithm: 'SHA-256', maxnumber: 2000 });
    const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
    const payload = payloadOf(challenge, solution!.number);

    expect(await challenges.verify(7, 'büyer.one', payload)).toEqual({
      id: challenge.signature,
      expiresAt: Math.floor((now + CHALLENGE_TTL_MS) / 1000) * 1000,
    });
    expect(await challenges.verify(7, 'someone else', payload)).toBeNull();
    expect(await challenges.verify(8, 'büyer.one', payload)).toBeNull();
    expect(await challenges.verify(7, 'büyer.one', payloadOf(challenge, solution!.number + 1))).toBeNull();
    expect(await createDoorChallenges('another-secret-of-at-least-thirty-two-chars', () => now).verify(7, 'büyer.one', payload)).toBeNull();
    for (const junk of ['', 'not base64 json', Buffer.from('[1,2]').toString('base64'), 'x'.repeat(3000)])
      expect(await challenges.verify(7, 'büyer.one', junk)).toBeNull();
    now += CHALLENGE_TTL_MS + 1000;
    expect(await challenges.verify(7, 'büyer.one', payload)).toBeNull();
  });

  it('pow keeps its difficulty; auto raises it as joins outpace admissions, 1x to 100x, within the bounds', () => {
    expect(challengeDifficulty('pow', 100_000, 5000, 50)).toBe(100_000);
    expect(challengeDifficulty('auto', 100_000, 10, 50)).toBe(100_000);
    expect(challengeDifficulty('auto', 100_000, 500, 50)).toBe(1_000_000);
    expect(challengeDifficulty('auto', 100_000, 1_000_000, 50)).toBe(10_000_000);
    expect(challengeDifficulty('auto', 1000, 1_000_000, 50)).toBe(100_000);
  });
});
