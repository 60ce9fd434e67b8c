import { once } from 'node:events';
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import {
  METRICS_RENDERS_PER_SECOND,
  rationedRenders,
  readinessProbe,
  serveMetrics,
  type MetricsSource,
  type ReadinessChecks,
} from './metrics-server.ts';

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

/** A source whose every render is numbered: `render 1`, `render 2`..., or fails while `failing`. */
function countedSource(): MetricsSource & { renders: number; failing: boolean } {
  const source = {
    renders: 0,
    failing: false,
    contentType: 'text/plain',
    metrics: async () => {
      source.renders += 1;
      if (source.failing) throw new Error('render failed');
      return `render ${source.renders}`;
    },
  };
  return source;
}

describe('the renders of /metrics', () => {
  it('renders at most the ration in a second; past it a scrape gets the latest text of that second, and the next second renders again', async () => {
    const source = countedSource();
    let clock = 5_000;
    const render = rationedRenders(source, 3, () => clock);

    const first = [];
    for (let i = 0; i < 10; i += 1) first.push(await render());
    expect(first).toEqual(['render 1', 'render 2', 'render 3', ...Array<string>(7).fill('render 3')]);

    clock = 5_999;
    expect(await render()).toBe('render 3');
    clock = 6_000;
    expect([await render(), await render(), await render(), await render()]).toEqual(['render 4', 'render 5', 'render 6', 'render 6']);
    expect(source.renders).toBe(6);
  });

  it("never answers with an earlier second's text, and keeps no failed render", async () => {
    const source = countedSource();
    let clock = 0;
    const render = rationedRenders(source, 2, () => clock);
    expect([await render(), await render(), await render()]).toEqual(['render 1', 'render 2', 'render 2']);

    // A new second whose renders all fail: past the ration, nothing of this second to give but a render.
    clock = 1_000;
    source.failing = true;
    await expect(render()).rejects.toThrow('render failed');
    await expect(render()).rejects.toThrow('render failed');
    await expect(render()).rejects.toThrow('render failed');
    source.failing = false;
    expect(await render()).toBe('render 6');
    expect(await render()).toBe('render 6');
  });

  it('shares the render under way with the scrapes past the ration that come before it ends', async () => {
    let finish: (text: string) => void = () => undefined;
    let renders = 0;
    const render = rationedRenders(
      {
        contentType: 'text/plain',
        metrics: () => ((renders += 1), new Promise<string>((resolve) => (finish = resolve))),
      },
      1,
      () => 0,
    );
    const answers = Promise.all([render(), render(), render()]);
    finish('the one render');
    expect(await answers).toEqual(['the one render', 'the one render', 'the one render']);
    expect(renders).toBe(1);
  });

  it('through the port: a flood of scrapes is answered in full, rendered at most the ration of each second it lasts', async () => {
    const source = countedSource();
    const server = serveMetrics(source, 0, undefined, { rendersPerSecond: 2 });
    servers.push(server);
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    const started = performance.now();

    const answers = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const seen: string[] = [];
        for (let i = 0; i < 50; i += 1) seen.push(await (await fetch(url)).text());
        return seen;
      }),
    );
    // The seconds the flood touched, on the clock the ration counts by: 2 renders each at most.
    const seconds = Math.floor(performance.now() / 1000) - Math.floor(started / 1000) + 1;

    expect(answers.flat().every((text) => /^render \d+$/.test(text))).toBe(true);
    expect(source.renders).toBeLessThanOrEqual(2 * seconds);
  });

  it('renders METRICS_RENDERS_PER_SECOND times a second unless told otherwise', async () => {
    const source = countedSource();
    const render = rationedRenders(source, undefined, () => 0);
    for (let i = 0; i < 100; i += 1) await render();
    expect(source.renders).toBe(METRICS_RENDERS_PER_SECOND);
  });
});
