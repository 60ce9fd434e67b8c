import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { adminSessionKey } from './keys.ts';

/**
 * An operator's dashboard session (key `admin-session:<sha256 of its id>`, JSON, expiring with it): kept in
 * Redis rather than in a gateway's memory, so any gateway process (GATEWAY_WORKERS, several hosts) knows
 * it, and a logout ends it everywhere.
 */
export interface AdminSession {
  /** The per-session token the dashboard sends in a header with every change (CSRF). */
  csrfToken: string;
  /** SHA-256 of the admin token it was opened with: a new ADMIN_TOKEN ends every older session. */
  adminTokenHash: string;
  /** When it ends, epoch ms (the key's own expiry is the authority; this is for the page to show). */
  expiresAt: number;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Opens a session for `ttlMs`; returns its id (for the cookie only) and the session. */
export async function createAdminSession(redis: Redis, prefix: string, adminToken: string, ttlMs: number, now = Date.now()): Promise<{ id: string; session: AdminSession }> {
  const id = randomBytes(32).toString('base64url');
  const session: AdminSession = { csrfToken: randomBytes(32).toString('base64url'), adminTokenHash: sha256(adminToken), expiresAt: now + ttlMs };
  await redis.set(adminSessionKey(prefix, sha256(id)), JSON.stringify(session), 'PX', ttlMs);
  return { id, session };
}

/** The session of an id, if open and opened with `adminToken`; null otherwise (expired, logged out, unknown). */
export async function readAdminSession(redis: Redis, prefix: string, id: string, adminToken: string): Promise<AdminSession | null> {
  const stored = await redis.get(adminSessionKey(prefix, sha256(id)));
  if (stored === null) return null;
  const session = JSON.parse(stored) as AdminSession;
  return session.adminTokenHash === sha256(adminToken) ? session : null;
}

export async function deleteAdminSession(redis: Redis, prefix: string, id: string): Promise<void> {
  await redis.del(adminSessionKey(prefix, sha256(id)));
}
