import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createAdminSession, deleteAdminSession, readAdminSession } from './admin-session.ts';

// Real Redis, a prefix of the file's own. The key's expiry is Redis's to keep.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const prefix = `test-admin-session-${randomUUID()}`;
afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const TOKEN = 'the-admin-token';
const keyOf = (id: string) => `${prefix}:admin-session:${createHash('sha256').update(id).digest('hex')}`;

describe('admin sessions', () => {
  it('ends a session left unused for its idle time, though its absolute time is far off', async () => {
    const { id } = await createAdminSession({ redis, prefix }, TOKEN, { ttlMs: 60_000, idleMs: 150 });
    expect(await readAdminSession({ redis, prefix }, id, TOKEN)).not.toBeNull();

    await sleep(300);

    expect(await readAdminSession({ redis, prefix }, id, TOKEN)).toBeNull();
  });

  // The lifetimes below are read from Redis (PTTL) against times measured around the reads, not slept
  // through: a busy machine may take any time between two commands, and the verdicts do not depend on it.
  it('keeps a session in use open past its idle time: each touch starts the idle time again', async () => {
    const idleMs = 5000;
    const { id } = await createAdminSession({ redis, prefix }, TOKEN, { ttlMs: 60_000, idleMs });
    for (let i = 0; i < 3; i++) {
      await sleep(200);
      // Untouched for at least 200 ms: that much of the idle time has gone.
      expect(await redis.pttl(keyOf(id))).toBeLessThanOrEqual(idleMs - 200);
      const touchedFrom = Date.now();
      expect(await readAdminSession({ redis, prefix }, id, TOKEN, { idleMs })).not.toBeNull();
      const ttl = await redis.pttl(keyOf(id));
      // Touched: the whole idle time again, less only what passed since the touch was sent.
      expect(ttl).toBeGreaterThanOrEqual(idleMs - (Date.now() - touchedFrom));
      expect(ttl).toBeLessThanOrEqual(idleMs);
    }
  });

  it('is not kept open by reads without touch (a live stream checking it at every event)', async () => {
    const { id } = await createAdminSession({ redis, prefix }, TOKEN, { ttlMs: 60_000, idleMs: 250 });
    let ttl = await redis.pttl(keyOf(id));
    for (let i = 0; i < 3 && ttl > 0; i++) {
      await readAdminSession({ redis, prefix }, id, TOKEN);
      const after = await redis.pttl(keyOf(id));
      // A read leaves the idle time running down (-2: gone, which a busy machine may reach here).
      expect(after).toBeLessThanOrEqual(ttl);
      ttl = after;
    }
    await sleep(400);

    expect(await readAdminSession({ redis, prefix }, id, TOKEN)).toBeNull();
  });

  it('never lets a touch carry a session past its absolute end', async () => {
    const { id, session } = await createAdminSession({ redis, prefix }, TOKEN, { ttlMs: 60_000, idleMs: 120_000 });
    const touchedFrom = Date.now();
    await readAdminSession({ redis, prefix }, id, TOKEN, { idleMs: 120_000 });
    const ttl = await redis.pttl(keyOf(id));

    // The idle time (2 min) would carry it further; the absolute end (1 min) holds.
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(session.expiresAt - touchedFrom + 5);
  });

  it('does not open again a signed-out session when touched', async () => {
    const { id } = await createAdminSession({ redis, prefix }, TOKEN, { ttlMs: 60_000, idleMs: 60_000 });
    await deleteAdminSession({ redis, prefix }, id);

    expect(await readAdminSession({ redis, prefix }, id, TOKEN, { idleMs: 60_000 })).toBeNull();
    expect(await redis.exists(keyOf(id))).toBe(0);
  });
});
