import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { adminSessionKey } from './keys.ts';
import type { StoreRef } from './store-ref.ts';

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

/**
 * How long a session lasts: `ttlMs` in all (the absolute limit, ADMIN_SESSION_TTL_SECONDS) and `idleMs`
 * without use (ADMIN_SESSION_IDLE_SECONDS). The key's own expiry is the authority for both: it is set to
 * whichever ends first, and moved on by each use (`touch`), never past the absolute end.
 */
export interface AdminSessionLifetime {
  ttlMs: number;
  idleMs: number;
}

const keyLifetimeMs = (session: AdminSession, idleMs: number, now: number) => Math.min(idleMs, session.expiresAt - now);

/** Opens a session; returns its id (for the cookie only) and the session. */
export async function createAdminSession(
  { redis, prefix }: StoreRef<Redis>,
  adminToken: string,
  lifetime: AdminSessionLifetime,
  now = Date.now(),
): Promise<{ id: string; session: AdminSession }> {
  const id = randomBytes(32).toString('base64url');
  const session: AdminSession = {
    csrfToken: randomBytes(32).toString('base64url'),
    adminTokenHash: sha256(adminToken),
    expiresAt: now + lifetime.ttlMs,
  };
  await redis.set(adminSessionKey(prefix, sha256(id)), JSON.stringify(session), 'PX', keyLifetimeMs(session, lifetime.idleMs, now));
  return { id, session };
}

/**
 * The session of an id, if open and opened with `adminToken`; null otherwise (expired, idle too long,
 * logged out, unknown). With `touch`, a use by the operator: the idle limit starts again from now. A live
 * stream checks its session at every event without `touch`, so an open page alone keeps nobody signed in.
 */
export async function readAdminSession(
  { redis, prefix }: StoreRef<Redis>,
  id: string,
  adminToken: string,
  touch?: { idleMs: number },
  now = Date.now(),
): Promise<AdminSession | null> {
  const key = adminSessionKey(prefix, sha256(id));
  const stored = await redis.get(key);
  if (stored === null) return null;
  const session = JSON.parse(stored) as AdminSession;
  if (session.adminTokenHash !== sha256(adminToken)) return null;
  // PEXPIRE XX: only while the key exists, so a sign-out between the GET and this stays a sign-out.
  if (touch) await redis.pexpire(key, Math.max(1, keyLifetimeMs(session, touch.idleMs, now)), 'XX');
  return session;
}

export async function deleteAdminSession({ redis, prefix }: StoreRef<Redis>, id: string): Promise<void> {
  await redis.del(adminSessionKey(prefix, sha256(id)));
}
