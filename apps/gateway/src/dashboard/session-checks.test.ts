import { describe, expect, it } from 'vitest';
import type { AdminSession } from '@flashsale/redis-store';
import { SessionChecks } from './session-checks.ts';

const session = { csrfToken: 'c', expiresAt: 1 } as AdminSession;

describe('SessionChecks', () => {
  it('shares one read among the checks of a session asked while it is on its way, and reads again after', async () => {
    const reads: string[] = [];
    const checks = new SessionChecks(async (id) => (reads.push(id), id === 'gone' ? null : session));

    const together = await Promise.all([
      checks.check('a'),
      checks.check('a'),
      checks.check('a'),
      checks.check('gone'),
      checks.check('gone'),
    ]);
    expect(together).toEqual([session, session, session, null, null]);
    expect(reads).toEqual(['a', 'gone']);

    await checks.check('a');
    expect(reads).toEqual(['a', 'gone', 'a']);
  });

  it('answers undefined when the read fails (not vouched for), and reads again at the next check', async () => {
    let fail = true;
    const checks = new SessionChecks(async () => {
      if (fail) throw new Error('Command timed out');
      return session;
    });

    expect(await checks.check('a')).toBeUndefined();
    fail = false;
    expect(await checks.check('a')).toBe(session);
  });
});
