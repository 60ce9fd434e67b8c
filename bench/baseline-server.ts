/**
 * The benchmark's baselines: a bare node:http server that makes the same single EVALSHA of the same
 * reserve script (reserve.lua, through the same ioredis command) per request, and nothing else: no
 * framework, no validation, no metrics, no rate limit. The gateway's purchase endpoint is measured
 * against it; what it costs beyond this is the gateway's own.
 *
 * BASELINE_AUTH selects what stands for the buyer's identity:
 * - `none` (default, the bare baseline): the buyer id is read from the `X-Buyer` header;
 * - `hs256` (the authenticated baseline): the buyer comes from the bearer token, checked the way any
 *   node:crypto HS256 verifier would do it (a KeyObject HMAC of the signed part, timingSafeEqual against
 *   the signature, JSON.parse of the claims, `exp` in the future and `sub` a string), 401 otherwise.
 *   The difference between the two is what authentication costs; what the gateway costs beyond the
 *   second is everything else it does (purchase route, rate limits, body, metrics, verdicts, answer).
 *
 * Run: BENCH_PREFIX=... PORT=... [BASELINE_AUTH=hs256 AUTH_SECRET=...] tsx bench/baseline-server.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac, createSecretKey, randomUUID, timingSafeEqual } from 'node:crypto';
import { DEV_AUTH_SECRET } from '@flashsale/config';
import { createRedis, createSaleStore } from '@flashsale/redis-store';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { name: 'bench-baseline' });
const store = createSaleStore(redis, process.env.BENCH_PREFIX ?? 'bench');
const auth = process.env.BASELINE_AUTH ?? 'none';
if (auth !== 'none' && auth !== 'hs256') throw new Error(`BASELINE_AUTH must be none or hs256, not ${auth}`);
const PATH = /^\/api\/sales\/(\d+)\/purchase$/;
const key = createSecretKey(Buffer.from(process.env.AUTH_SECRET ?? DEV_AUTH_SECRET, 'utf8'));

/** The buyer of a verified HS256 bearer token, or undefined. */
function tokenBuyer(authorization: string | undefined): string | undefined {
  if (!authorization?.startsWith('Bearer ')) return undefined;
  const firstDot = authorization.indexOf('.');
  const lastDot = authorization.lastIndexOf('.');
  if (firstDot < 0 || lastDot <= firstDot) return undefined;
  const expected = createHmac('sha256', key).update(authorization.slice(7, lastDot)).digest();
  const given = Buffer.from(authorization.slice(lastDot + 1), 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(authorization.slice(firstDot + 1, lastDot), 'base64url').toString('utf8')) as {
      exp?: unknown;
      sub?: unknown;
    };
    return typeof claims.exp === 'number' && claims.exp > Date.now() / 1000 && typeof claims.sub === 'string' ? claims.sub : undefined;
  } catch {
    return undefined;
  }
}

const server = createServer((req, res) => {
  req.resume();
  const saleId = Number(PATH.exec(req.url ?? '')?.[1]);
  const userId = auth === 'hs256' ? tokenBuyer(req.headers.authorization) : String(req.headers['x-buyer']);
  if (userId === undefined) {
    res.writeHead(401).end();
    return;
  }
  store.reserve({ saleId, userId, quantity: 1, reservationId: `${saleId}-${randomUUID()}` }).then(
    (outcome) => {
      const body = JSON.stringify(outcome);
      res.writeHead(outcome.kind === 'reserved' ? 202 : 409, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    },
    () => {
      res.writeHead(503).end();
    },
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'baseline listening', auth, port: (server.address() as AddressInfo).port }));
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void redis.quit().then(() => process.exit(0));
});
