import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '@flashsale/domain';
import { sendProblem } from '../problem.ts';
import { addressBudget } from '../request-limits.ts';
import { crowdRoutes } from './crowd-routes.ts';

// The crowd routes refuse a public read of a sale from an address that has spent its budget this second,
// before Express, with the answer the app would give, when the address may ask again; everything else
// goes on to the app.

let ms = 10_000;
const budget = addressBudget(2, 0, () => ms);
let reachedApp = 0;
const app = express();
app.use((_req, _res, next) => {
  reachedApp += 1;
  next();
});
app.get('/api/sales/:saleId', budget, (_req, res) => void res.json({ ok: true }));
app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
app.use(((error, _req, res, _next) => sendProblem(res, error as AppError)) as ErrorRequestHandler);
const unused = () => {
  throw new Error('not a crowd path in this test');
};

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer(crowdRoutes({ purchase: unused, queueStatus: unused, publicReads: budget }, app));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const answer = async (path: string) => {
  const res = await fetch(`${url}${path}`);
  return { status: res.status, retryAfter: res.headers.get('retry-after'), type: res.headers.get('content-type'), body: await res.text() };
};

describe('the crowd routes, a sale read past the address budget', () => {
  it("is refused before the app once the app has refused the address this second, with the app's own answer sent when the next second starts; other paths and the next second reach the app", async () => {
    const first = [await answer('/api/sales/7'), await answer('/api/sales/8')];
    expect(first.map((a) => a.status)).toEqual([200, 200]);
    const byApp = await answer('/api/sales/9');
    expect(reachedApp).toBe(3);
    expect(byApp).toMatchObject({ status: 429, retryAfter: '1' });

    // Spent, and told so: refused at the door, every spelling the router would take, the same answer,
    // sent when the next second of the budget starts (the clock says 10,000 ms: a full second ahead).
    const asked = performance.now();
    const held = await Promise.all(['/api/sales/9', '/API/Sales/10/', '/api/sales/11?x=1'].map(answer));
    expect(performance.now() - asked).toBeGreaterThanOrEqual(950);
    expect(held).toEqual([byApp, byApp, byApp]);
    expect(reachedApp).toBe(3);
    // Not a sale read: the app's, budget or not.
    expect((await answer('/healthz')).status).toBe(200);
    expect(reachedApp).toBe(4);

    ms += 1000;
    expect((await answer('/api/sales/9')).status).toBe(200);
    expect(reachedApp).toBe(5);
  });
});
