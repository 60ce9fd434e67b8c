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

/** 429 RATE_LIMITED, to be asked again in a second (a budget's window). */
export const rateLimited = () => new AppError('RATE_LIMITED', undefined, {}, { 'Retry-After': '1' });

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
  return budgets(config.RATE_LIMIT_PER_SECOND, config.RATE_LIMIT_PER_ADDRESS_PER_SECOND, config.TRUST_PROXY, now);
}

/**
 * The budgets of waiting-room joins (QUEUE_JOINS_PER_SECOND per buyer, QUEUE_JOINS_PER_ADDRESS_PER_SECOND
 * per address, 0 = none), counted on top of the queue's own: a join costs a Redis call and makes a place,
 * where a poll with a ticket costs neither, so an account farm runs out of joins long before polls.
 */
export function createJoinLimits(
  config: Pick<Config, 'QUEUE_JOINS_PER_SECOND' | 'QUEUE_JOINS_PER_ADDRESS_PER_SECOND' | 'TRUST_PROXY'>,
  now?: () => number,
): RequestLimits {
  return budgets(config.QUEUE_JOINS_PER_SECOND, config.QUEUE_JOINS_PER_ADDRESS_PER_SECOND, config.TRUST_PROXY, now);
}

function budgets(perBuyer: number, perAddress: number, trustedProxies: number, now?: () => number): RequestLimits {
  const buyers = new RateLimiter(perBuyer, now);
  const addresses = perAddress > 0 ? new RateLimiter(perAddress, now) : null;
  return {
    checkAddress(req) {
      if (addresses && !addresses.take(clientAddress(req, trustedProxies))) throw rateLimited();
    },
    checkBuyer(buyer) {
      if (!buyers.take(buyer)) throw rateLimited();
    },
  };
}

/** A per-address budget as middleware, and a look at whether a request's address has spent it already. */
export interface AddressBudget extends RequestHandler {
  /** Whether the request's address is past its budget this second (counting nothing): it would be refused. */
  spent(req: IncomingMessage): boolean;
  /** Milliseconds until the budget's next second, when every address has its budget again. */
  untilNextSecond(): number;
}

/**
 * A per-address budget alone (`perSecond` requests a second from one client address, per process; 0 =
 * none), as middleware: for an endpoint whose callers are not buyers, such as the payment provider's.
 */
export function addressBudget(perSecond: number, trustedProxies: number, now: () => number = () => performance.now()): AddressBudget {
  const addresses = perSecond > 0 ? new RateLimiter(perSecond, now) : null;
  const budget: RequestHandler = (req, _res, next) => {
    if (addresses && !addresses.take(clientAddress(req, trustedProxies))) throw rateLimited();
    next();
  };
  return Object.assign(budget, {
    spent: (req: IncomingMessage) => addresses !== null && addresses.over(clientAddress(req, trustedProxies)),
    untilNextSecond: () => 1000 - (now() % 1000),
  });
}
