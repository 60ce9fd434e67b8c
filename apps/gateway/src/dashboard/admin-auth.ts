import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { AppError } from '@flashsale/domain';
import type { AdminSession } from '@flashsale/sales';
import type { GatewayDeps } from '../deps.ts';
import type { AdminGuard } from './admin-guard.ts';

/** The dashboard's session cookie: HttpOnly, SameSite=Strict, Path=/ (dashboard-session.ts sets it). */
export const SESSION_COOKIE = 'flashsale_admin';
/** The header the dashboard sends its session's CSRF token in, on every change. */
export const CSRF_HEADER = 'x-csrf-token';

/** The session id the request's cookie names, if any. */
export function sessionIdOf(headers: IncomingHttpHeaders): string | undefined {
  for (const pair of (headers.cookie ?? '').split(';')) {
    const equals = pair.indexOf('=');
    if (equals > 0 && pair.slice(0, equals).trim() === SESSION_COOKIE) return pair.slice(equals + 1).trim() || undefined;
  }
  return undefined;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses a cookie-authenticated change that another site could have made the browser send. SameSite=Strict
 * already keeps the cookie off cross-site requests in current browsers; these are the checks that do not
 * depend on it: the browser's own word on where the request comes from (Sec-Fetch-Site, Origin), and the
 * session's CSRF token, which only a page of this origin could read (GET /admin/session, same-origin JSON).
 * A request that says nothing of its origin (no Origin, no Sec-Fetch-Site: a script, curl) still needs the
 * token.
 */
export function checkSameOriginChange(req: Request, session: AdminSession | null): void {
  if (SAFE_METHODS.has(req.method)) return;
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') throw new AppError('CSRF_REJECTED', { because: 'other_site', site });
  const origin = req.headers.origin;
  if (origin !== undefined && originHost(origin) !== req.headers.host)
    throw new AppError('CSRF_REJECTED', { because: 'other_origin', origin });
  // Signing in has no session yet: the origin checks alone guard it.
  if (session === null) return;
  const given = Buffer.from(String(req.headers[CSRF_HEADER] ?? ''));
  const expected = Buffer.from(session.csrfToken);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new AppError('CSRF_REJECTED', { because: 'no_token', header: CSRF_HEADER });
}

function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

/**
 * The open session of a request's cookie, or null. A request the page makes for the operator: it counts
 * as use, and the session's idle limit (ADMIN_SESSION_IDLE_SECONDS) starts again.
 */
export async function sessionOf(deps: GatewayDeps, req: Request): Promise<{ id: string; session: AdminSession } | null> {
  const id = sessionIdOf(req.headers);
  if (id === undefined) return null;
  const session = await deps.sales.readAdminSession(id, deps.config.ADMIN_TOKEN, { idleMs: deps.config.ADMIN_SESSION_IDLE_SECONDS * 1000 });
  return session && { id, session };
}

/**
 * Authentication of /api/admin/*: the admin token as a bearer token (scripts, the CLI, curl), or the
 * dashboard's session cookie, with the CSRF checks on every change. A request with an Authorization header
 * is judged by it alone: browsers never add one by themselves, so it needs no CSRF check.
 */
export function adminAuthentication(deps: GatewayDeps, guard: AdminGuard): RequestHandler {
  return async (req, res, next) => {
    if (req.headers.authorization !== undefined || sessionIdOf(req.headers) === undefined) {
      guard.checkToken(req, req.headers.authorization);
      return next();
    }
    const open = await sessionOf(deps, req);
    if (!open) throw new AppError('UNAUTHORIZED', { because: 'session_closed' });
    checkSameOriginChange(req, open.session);
    res.locals.adminSession = open.session;
    next();
  };
}
