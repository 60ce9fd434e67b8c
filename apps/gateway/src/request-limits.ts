import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { Config } from '@flashsale/config';
import { AppError } from '@flashsale/domain';
import { RateLimiter } from './rate-limiter.ts';
import { clientAddress } from './client-address.ts';

/** The budgets of one endpoint of one gateway process; each check throws 429 RATE_LIMITED past its budget. */
export interface RequestLimits {
  /** Counts the request against its client address (see client-address.ts); before authentication, as it needs none. */
  checkAddress(req: IncomingMessage): void;
  /** Counts the request against the authenticated buyer. */
  checkBuyer(buyer: string): void;
}

const rateLimited = () => new AppError('RATE_LIMITED', undefined, {}, { 'Retry-After': '1' });

/**
 * Per-buyer (RATE_LIMIT_PER_SECOND) and per-address (RATE_LIMIT_PER_ADDRESS_PER_SECOND, 0 = none)
 * budgets, in memory: a budget kept in Redis would add a round trip to the purchase path, which has
 * exactly one. So each budget is per process: N gateway processes let through up to N times the
 * budget, and a client whose requests are spread over them gets each process's budget.
 *
 * Each endpoint makes its own, so a buyer polling a reservation does not use up the budget to buy.
 */
export function createRequestLimits(
  config: Pick<Config, 'RATE_LIMIT_PER_SECOND' | 'RATE_LIMIT_PER_ADDRESS_PER_SECOND' | 'TRUST_PROXY'>,
  now?: () => number,
): RequestLimits {
  const buyers = new RateLimiter(config.RATE_LIMIT_PER_SECOND, now);
  const addresses = config.RATE_LIMIT_PER_ADDRESS_PER_SECOND > 0 ? new RateLimiter(config.RATE_LIMIT_PER_ADDRESS_PER_SECOND, now) : null;
  const trustedProxies = config.TRUST_PROXY;
  return {
    checkAddress(req) {
      if (addresses && !addresses.take(clientAddress(req, trustedProxies))) throw rateLimited();
    },
    checkBuyer(buyer) {
      if (!buyers.take(buyer)) throw rateLimited();
    },
  };
}

/**
 * A per-address budget alone (`perSecond` requests a second from one client address, per process; 0 =
 * none), as middleware: for an endpoint whose callers are not buyers, such as the payment provider's.
 */
export function addressBudget(perSecond: number, trustedProxies: number, now?: () => number): RequestHandler {
  const addresses = perSecond > 0 ? new RateLimiter(perSecond, now) : null;
  return (req, _res, next) => {
    if (addresses && !addresses.take(clientAddress(req, trustedProxies))) throw rateLimited();
    next();
  };
}
