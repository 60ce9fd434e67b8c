import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { readinessProbe, serveMetrics, type ReadinessChecks } from './metrics-server.ts';

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function served(checks?: ReadinessChecks, timeoutMs?: number): Promise<string> {
  const server = serveMetrics(new Registry(), 0, checks && readinessProbe(checks, timeoutMs));
  servers.push(server);
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function get(url: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url);
  const text = await res.text();
  return { status: res.status, body: text === '' ? '' : JSON.parse(text) };
}

/** A store that never answers, as one behind a black hole: it counts how often it was asked. */
function hungStore(): { asked: number; check: () => Promise<unknown> } {
  const store = { asked: 0, check: () => ((store.asked += 1), new Promise(() => undefined)) };
  return store;
}

describe('the internal port of a process', () => {
  it('answers /readyz with 200 when every store answers', async () => {
    const base = await served({ redis: async () => 'PONG', mysql: async () => [{ 1: 1 }] });

    expect(await get(`${base}/readyz`)).toEqual({ status: 200, body: { status: 'ready', checks: { redis: 'up', mysql: 'up' } } });
  });

  it('answers /readyz with 503 naming a store that refused, and one that did not answer within the timeout', async () => {
    const base = await served({ redis: async () => Promise.reject(new Error('connect ECONNREFUSED')), mysql: hungStore().check }, 200);
    const started = Date.now();

    const answer = await get(`${base}/readyz`);

    expect(answer).toEqual({ status: 503, body: { status: 'not_ready', checks: { redis: 'down', mysql: 'down' } } });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('asks a store that has not answered yet once, however often /readyz is polled', async () => {
    const mysql = hungStore();
    const base = await served({ mysql: mysql.check }, 100);

    const answers = await Promise.all(Array.from({ length: 5 }, () => get(`${base}/readyz`)));
    answers.push(await get(`${base}/readyz`));

    expect(answers.map((a) => a.status)).toEqual([503, 503, 503, 503, 503, 503]);
    expect(mysql.asked).toBe(1);
  });

  it('answers /healthz with 200 whatever the stores do, and /readyz with 404 when it was given no checks', async () => {
    const withChecks = await served({ mysql: hungStore().check });
    const without = await served();

    expect(await get(`${withChecks}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await get(`${without}/readyz`)).toEqual({ status: 404, body: '' });
  });
});
