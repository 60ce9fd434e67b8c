/**
 * The benchmark's baseline (a): a bare node:http server that makes the same single EVALSHA of the same
 * reserve script (reserve-3.lua, through the same ioredis command) per request, and nothing else: no
 * framework, no token check (the buyer comes from the `x-buyer` header), no validation, no metrics. The
 * gateway's purchase endpoint is measured against it; what it costs beyond this is the gateway's own.
 *
 * Run: BENCH_PREFIX=... PORT=... tsx bench/baseline-server.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createRedis, reservePurchase } from '@flashsale/redis-store';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { name: 'bench-baseline' });
const prefix = process.env.BENCH_PREFIX ?? 'bench';
const PATH = /^\/api\/sales\/(\d+)\/purchase$/;

const server = createServer((req, res) => {
  req.resume();
  const saleId = Number(PATH.exec(req.url ?? '')?.[1]);
  const userId = String(req.headers['x-buyer']);
  reservePurchase(redis, prefix, { saleId, userId, quantity: 1, reservationId: `${saleId}-${randomUUID()}` }).then(
    (outcome) => {
      const body = JSON.stringify(outcome);
      res.writeHead(outcome.kind === 'reserved' ? 202 : 409, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    },
    () => {
      res.writeHead(503).end();
    },
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'baseline listening', port: (server.address() as AddressInfo).port }));
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void redis.quit().then(() => process.exit(0));
});
