import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createAdminSession, deleteAdminSession, readAdminSession } from './admin-session.ts';

// Real Redis, a prefix of the file's own. Lifetimes in tens of ms: the key's expiry is Redis's to keep.
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
    const { id } = await createAdminSession(redis, prefix, TOKEN, { ttlMs: 60_000, idleMs: 150 });
    expect(await readAdminSession(redis, prefix, id, TOKEN)).not.toBeNull();

    await sleep(300);

    expect(await readAdminSession(redis, prefix, id, TOKEN)).toBeNull();
  });

  it('keeps a session in use open past its idle time: each touch starts the idle time again', async () => {
    const { id } = await createAdminSession(redis, prefix, TOKEN, { ttlMs: 60_000, idleMs: 300 });
    for (let i = 0; i < 5; i++) {
      await sleep(120);
      expect(await readAdminSession(redis, prefix, id, TOKEN, { idleMs: 300 })).not.toBeNull();
    }
    // 600 ms after it opened: twice its idle time, open because it was used.
    expect(await readAdminSession(redis, prefix, id, TOKEN)).not.toBeNull();
  });

  it('is not kept open by reads without touch (a live stream checking it at every event)', async () => {
    const { id } = await createAdminSession(redis, prefix, TOKEN, { ttlMs: 60_000, idleMs: 250 });
    for (let i = 0; i < 3; i++) {
      await sleep(60);
      expect(await readAdminSession(redis, prefix, id, TOKEN)).not.toBeNull();
    }
    await sleep(200);

    expect(await readAdminSession(redis, prefix, id, TOKEN)).toBeNull();
  });

  it('never lets a touch carry a session past its absolute end', async () => {
    const { id, session } = await createAdminSession(redis, prefix, TOKEN, { ttlMs: 400, idleMs: 60_000 });
    await readAdminSession(redis, prefix, id, TOKEN, { idleMs: 60_000 });
    const ttl = await redis.pttl(keyOf(id));

    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(session.expiresAt - Date.now() + 5);
  });

  it('does not open again a signed-out session when touched', async () => {
    const { id } = await createAdminSession(redis, prefix, TOKEN, { ttlMs: 60_000, idleMs: 60_000 });
    await deleteAdminSession(redis, prefix, id);

    expect(await readAdminSession(redis, prefix, id, TOKEN, { idleMs: 60_000 })).toBeNull();
    expect(await redis.exists(keyOf(id))).toBe(0);
  });
});
