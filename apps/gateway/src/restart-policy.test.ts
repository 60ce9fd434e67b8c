import { describe, expect, it } from 'vitest';
import { RestartPolicy } from './restart-policy.ts';

const crashedAfterListening = { listened: true, upMs: 2000 };
const diedAtStart = { listened: false, upMs: 800 };

describe('when the gateway supervisor replaces a process that died', () => {
  it('waits 100 ms after the first death, doubling at each death after, up to 10 s', () => {
    const policy = new RestartPolicy();

    const waits = Array.from({ length: 10 }, () => policy.afterDeath(crashedAfterListening));

    expect(waits).toEqual([100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000].map((restartInMs) => ({ restartInMs })));
  });

  it('starts the wait over from 100 ms after a process that had run 30 s', () => {
    const policy = new RestartPolicy();
    for (let i = 0; i < 6; i += 1) policy.afterDeath(crashedAfterListening);

    expect(policy.afterDeath({ listened: true, upMs: 30_000 })).toEqual({ restartInMs: 100 });
    expect(policy.afterDeath(crashedAfterListening)).toEqual({ restartInMs: 200 });
  });

  it('gives up at the 5th process in a row that died before it listened', () => {
    const policy = new RestartPolicy();

    const decisions = Array.from({ length: 5 }, () => policy.afterDeath(diedAtStart));

    expect(decisions).toEqual([
      { restartInMs: 100 },
      { restartInMs: 200 },
      { restartInMs: 400 },
      { restartInMs: 800 },
      { giveUp: true, startFailures: 5 },
    ]);
  });

  it('counts deaths before listening only in a row: one process that listened in between starts the count over', () => {
    const policy = new RestartPolicy();
    for (let i = 0; i < 4; i += 1) policy.afterDeath(diedAtStart);
    policy.afterDeath(crashedAfterListening);

    const decisions = Array.from({ length: 4 }, () => policy.afterDeath(diedAtStart));

    expect(decisions.every((d) => 'restartInMs' in d)).toBe(true);
    expect(policy.afterDeath(diedAtStart)).toEqual({ giveUp: true, startFailures: 5 });
  });

  it('never gives up on processes that crash after listening, however often', () => {
    const policy = new RestartPolicy();

    const decisions = Array.from({ length: 50 }, () => policy.afterDeath(crashedAfterListening));

    expect(decisions.every((d) => 'restartInMs' in d)).toBe(true);
  });
});
