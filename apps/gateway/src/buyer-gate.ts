import type { IncomingMessage } from 'node:http';
import type { Config } from '@flashsale/config';
import { createBuyerAuthenticator } from './auth.ts';
import type { RequestLimits } from './request-limits.ts';

/**
 * The buyer a request comes from, within an endpoint's budgets (`limits`): its address's budget, then
 * its token, then the buyer's budget, throwing 429 or 401 at the first refusal. The cheapest refusals come
 * first: the address's budget before the token's HMAC, which it does not need.
 */
export type BuyerGate = (req: IncomingMessage, limits: RequestLimits) => string;

/**
 * The gateway's one buyer authentication (every buyer route: purchase, queue, reservation, cancel), made
 * once per process so its cache of accepted token headers (auth.ts) serves them all.
 */
export function createBuyerGate(config: Pick<Config, 'AUTH_SECRET' | 'AUTH_CLOCK_TOLERANCE_SECONDS'>): BuyerGate {
  const authenticate = createBuyerAuthenticator(config.AUTH_SECRET, config.AUTH_CLOCK_TOLERANCE_SECONDS);
  return (req, limits) => {
    limits.checkAddress(req);
    const userId = authenticate(req.headers.authorization);
    limits.checkBuyer(userId);
    return userId;
  };
}
