import { hostname } from 'node:os';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { Config } from '@flashsale/config';
import type { Logger } from '@flashsale/runtime';
import { AppError } from '@flashsale/domain';
import { createAdminCheck } from '../auth.ts';
import { clientAddress } from '../client-address.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { summarisedLog } from '@flashsale/runtime';

const MINUTE_MS = 60_000;

export type AdminGuardConfig = Pick<
  Config,
  'ADMIN_TOKEN' | 'TRUST_PROXY' | 'ADMIN_AUTH_FAILURES_PER_ADDRESS_PER_MINUTE' | 'ADMIN_AUTH_FAILURES_PER_MINUTE' | 'ADMIN_ALLOWED_HOSTS'
>;

/** The admin token's one door: every check of it, wherever it is presented, goes through `checkToken`. */
export interface AdminGuard {
  /**
   * Checks `authorization` (`Bearer <token>`) against ADMIN_TOKEN for the request's client address:
   * 429 RATE_LIMITED (with Retry-After) while the address or the process is over its failure budget,
   * without looking at the token; 401 UNAUTHORIZED for a wrong one, which counts against both budgets.
   */
  checkToken(req: IncomingMessage, authorization: string | undefined): void;
  /** Refuses (403 HOST_NOT_ALLOWED) a request whose Host is not in ADMIN_ALLOWED_HOSTS. */
  allowedHost: RequestHandler;
}

/** The Host values allowed when ADMIN_ALLOWED_HOSTS is not set: this machine, by its names, any port. */
export function defaultAllowedHosts(): string[] {
  return ['localhost', '127.0.0.1', '[::1]', hostname().toLowerCase()];
}

/**
 * Guards the admin surface (/api/admin/*, /admin/*) against guessing, per gateway process, in memory:
 *
 * - failed token checks are counted per client address (TRUST_PROXY decides which address) and for the
 *   whole process in fixed one-minute windows; past ADMIN_AUTH_FAILURES_PER_ADDRESS_PER_MINUTE from one
 *   address, or ADMIN_AUTH_FAILURES_PER_MINUTE in all, the token is not even compared until the minute
 *   ends. At the defaults a guesser gets 100 tries a minute per process, against a token production
 *   requires to be random (secret-strength.ts). The price: during a spread-out attack an operator's own
 *   sign-in waits for the minute too; a session already open is not affected (its cookie is no token).
 * - every failure and every refusal is counted (flashsale_admin_auth_failures_total by outcome) and
 *   logged as a summary (the first at once, then counts at most every 10 s with the last address),
 *   never one line per guess;
 * - the Host header must be one the operator allowed, so a DNS-rebinding page (its own name pointed at
 *   this address) cannot use an operator's browser to reach the admin surface.
 *
 * Memory is bounded: the per-address map is cleared every minute and only failures add to it, which the
 * process-wide budget caps.
 */
export function createAdminGuard(
  config: AdminGuardConfig,
  logger: Logger,
  metrics: GatewayMetrics,
  now: () => number = () => performance.now(),
): AdminGuard {
  const checkAdmin = createAdminCheck(config.ADMIN_TOKEN);
  const log = summarisedLog<'invalid' | 'rate_limited'>(logger, 'admin authentication failures', 'failures');
  let window = -1;
  let total = 0;
  const byAddress = new Map<string, number>();

  const allowed = config.ADMIN_ALLOWED_HOSTS ?? defaultAllowedHosts();
  const anyHost = allowed.includes('*');
  const allowedHost: RequestHandler = (req, _res, next) => {
    if (anyHost || hostAllowed(req.headers.host, allowed)) return next();
    throw new AppError('HOST_NOT_ALLOWED', { host: JSON.stringify(req.headers.host ?? '') });
  };

  return {
    allowedHost,
    checkToken(req, authorization) {
      const at = now();
      const current = Math.floor(at / MINUTE_MS);
      if (current !== window) {
        window = current;
        total = 0;
        byAddress.clear();
      }
      const address = clientAddress(req, config.TRUST_PROXY);
      const ofAddress = byAddress.get(address) ?? 0;
      if (ofAddress >= config.ADMIN_AUTH_FAILURES_PER_ADDRESS_PER_MINUTE || total >= config.ADMIN_AUTH_FAILURES_PER_MINUTE) {
        metrics.adminAuthFailures.inc({ outcome: 'rate_limited' });
        log('rate_limited', { lastAddress: address });
        const retryAfter = Math.max(1, Math.ceil(((current + 1) * MINUTE_MS - at) / 1000));
        throw new AppError('RATE_LIMITED', { because: 'admin_failures' }, {}, { 'Retry-After': String(retryAfter) });
      }
      try {
        checkAdmin(authorization);
      } catch (error) {
        total += 1;
        byAddress.set(address, ofAddress + 1);
        metrics.adminAuthFailures.inc({ outcome: 'invalid' });
        log('invalid', { lastAddress: address });
        throw error;
      }
    },
  };
}

/** Whether `host` (a Host header) matches an entry: `name` for any port, `name:port` for that port. */
function hostAllowed(host: string | undefined, allowed: readonly string[]): boolean {
  if (host === undefined) return false;
  const lower = host.toLowerCase();
  const portAt = lower.lastIndexOf(':');
  // `[::1]:3000` has its port after the bracket; `[::1]` and `name` have none.
  const name = portAt > lower.lastIndexOf(']') ? lower.slice(0, portAt) : lower;
  return allowed.includes(lower) || allowed.includes(name);
}
