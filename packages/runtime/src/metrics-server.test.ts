import { once } from 'node:events';
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
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

describe('the guards of the internal port', () => {
  async function listening(listener: Parameters<typeof serveMetrics>[3]): Promise<number> {
    const server = serveMetrics(new Registry(), 0, undefined, listener);
    servers.push(server);
    await once(server, 'listening');
    return (server.address() as AddressInfo).port;
  }

  it('listens on 127.0.0.1 by default: another loopback address is refused', async () => {
    const port = await listening({});

    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    await expect(fetch(`http://127.0.0.2:${port}/healthz`)).rejects.toThrow('fetch failed');
  });

  it('with a token, serves /metrics only to a scrape that bears it; /healthz stays open', async () => {
    const port = await listening({ token: 'a-metrics-token-for-this-test' });

    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
    expect(
      (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: 'Bearer a-metrics-token-for-this-tesT' } })).status,
    ).toBe(401);
    expect(
      (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: 'Bearer a-metrics-token-for-this-test' } })).status,
    ).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  });

  it('holds at most maxConnections, a quarter from one address, and closes a half-sent request at the headers timeout', async () => {
    const refused: string[] = [];
    const port = await listening({
      maxConnections: 8,
      headersTimeoutMs: 1500,
      requestTimeoutMs: 1500,
      onRefused: (reason) => refused.push(reason),
    });
    const sockets: Socket[] = [];
    try {
      const open = async (localAddress: string) => {
        const socket = connect({ host: '127.0.0.1', port, localAddress });
        sockets.push(socket);
        socket.on('error', () => undefined);
        await once(socket, 'connect');
        // Half a request, never finished.
        socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n');
        // Read what comes (the 408): a paused socket would never see the close after it.
        socket.resume();
        return socket;
      };
      const fromOne = await Promise.all(Array.from({ length: 4 }, () => open('127.0.0.1')));
      await Promise.all(
        ['127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7', '127.0.0.8', '127.0.0.9'].map((address) => open(address)),
      );
      await expect
        .poll(() => refused.slice().sort(), { timeout: 60_000 })
        .toEqual(['overMaxConnections', 'overMaxConnectionsPerAddress', 'overMaxConnectionsPerAddress']);

      // Every one still open is closed by the headers timeout (1.5 s, swept every 375 ms), none kept.
      const closed = await Promise.all(fromOne.slice(0, 2).map((socket) => (socket.destroyed ? Promise.resolve() : once(socket, 'close'))));
      expect(closed).toHaveLength(2);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
