import { describe, expect, it } from 'vitest';
import { createChallenge, verifySolution } from 'altcha-lib/v1';
import { solveDoorChallenge } from './door-challenge-solver.ts';

describe('solveDoorChallenge', () => {
  it("answers a payload altcha-lib verifies, with the number it signed; none for another challenge's", async () => {
    const challenge = await createChallenge({ hmacKey: 'test key', maxNumber: 5000, number: 1234 });
    const { solution, number } = solveDoorChallenge({ ...challenge, maxnumber: challenge.maxnumber! });
    expect(number).toBe(1234);
    expect(await verifySolution(solution, 'test key')).toBe(true);
    expect(() => solveDoorChallenge({ ...challenge, maxnumber: 1000 })).toThrow('without a solution');
  });
});
