import { createHmac, createSecretKey, randomUUID, timingSafeEqual } from 'node:crypto';
import { DEV_AUTH_SECRET } from '@flashsale/config';
import { signBuyerTokens } from '@flashsale/harness';
import { newReservationId } from '@flashsale/domain';
import { createBuyerAuthenticator } from '../apps/gateway/src/auth.ts';
import { createRequestLimits } from '../apps/gateway/src/request-limits.ts';
import { createAcceptedAnswer } from '../apps/gateway/src/purchase/purchase-answers.ts';
import { createGatewayMetrics } from '../apps/gateway/src/metrics.ts';
import { saleKeys } from '@flashsale/redis-store';

const N = 200_000;
const ids = Array.from({ length: N }, (_, i) => `b${i}`);
const headers = signBuyerTokens(ids, { secret: DEV_AUTH_SECRET, ttlSeconds: 3600 }).map((t) => `Bearer ${t}`);
const key = createSecretKey(Buffer.from(DEV_AUTH_SECRET, 'utf8'));
function tokenBuyer(authorization: string | undefined): string | undefined {
  if (!authorization?.startsWith('Bearer ')) return undefined;
  const firstDot = authorization.indexOf('.');
  const lastDot = authorization.lastIndexOf('.');
  if (firstDot < 0 || lastDot <= firstDot) return undefined;
  const expected = createHmac('sha256', key).update(authorization.slice(7, lastDot)).digest();
  const given = Buffer.from(authorization.slice(lastDot + 1), 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const claims = JSON.parse(Buffer.from(authorization.slice(firstDot + 1, lastDot), 'base64url').toString('utf8'));
  return typeof claims.exp === 'number' && claims.exp > Date.now() / 1000 && typeof claims.sub === 'string' ? claims.sub : undefined;
}
const auth = createBuyerAuthenticator(DEV_AUTH_SECRET, 0);
const limits = createRequestLimits({ RATE_LIMIT_PER_SECOND: 5, RATE_LIMIT_PER_ADDRESS_PER_SECOND: 1_000_000_000, TRUST_PROXY: 0 });
const req = { socket: { remoteAddress: '127.0.0.1' }, headers: {} } as never;
const answer = createAcceptedAnswer();
const m = createGatewayMetrics();
function time(name: string, f: (i: number) => unknown) {
  for (let r = 0; r < 3; r++) {
    let sink: unknown;
    const t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) sink = f(i);
    const us = Number(process.hrtime.bigint() - t) / 1000 / N;
    if (r === 2) console.log(name.padEnd(24), us.toFixed(3), 'us', typeof sink);
  }
}
time('baseline tokenBuyer', (i) => tokenBuyer(headers[i]));
time('gateway authenticate', (i) => auth(headers[i]));
time('limits address+buyer', (i) => { limits.checkAddress(req); limits.checkBuyer(ids[i]!); });
time('randomUUID', () => randomUUID());
time('newReservationId', () => newReservationId(7));
time('accepted answer', (i) => answer(ids[i]!, 7, 1));
time('metrics 3', () => { m.purchases.inc('reserved'); m.purchaseSeconds.observe(0.002); m.reserveScriptSeconds.observe(0.001); });
time('performance.now', () => performance.now());
time('Date.now', () => Date.now());
time('saleKeys', () => saleKeys('bench', 7));
