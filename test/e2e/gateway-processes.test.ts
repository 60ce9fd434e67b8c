import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buyerToken, spawnApp, spawnGateway, type AppProcess } from '@flashsale/harness';
import { createLiveSale, createTestContext, type TestContext } from '../support/context.ts';
import { expectProblem } from '../support/http.ts';
import { keepAliveLoad, pollStatus, type KeepAliveLoad } from '../support/keep-alive-load.ts';

// Real gateway processes, alone and under the GATEWAY_WORKERS supervisor: where their metrics are
// served, how they are restarted, how they stop.

let ctx: TestContext;
let env: NodeJS.ProcessEnv;
const processes: AppProcess[] = [];
const loads: KeepAliveLoad[] = [];
const sockets: Socket[] = [];
/** Gateway processes a test froze with SIGSTOP: nothing but SIGKILL ends them. */
const frozen: number[] = [];
beforeAll(() => {
  ctx = createTestContext();
  env = { REDIS_PREFIX: ctx.config.REDIS_PREFIX, DATABASE_URL: ctx.config.DATABASE_URL, REDIS_URL: ctx.config.REDIS_URL };
});
afterEach(async () => {
  for (const load of loads.splice(0)) load.destroy();
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const pid of frozen.splice(0)) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
  await Promise.all(processes.splice(0).map((p) => p.kill('SIGKILL')));
});
afterAll(async () => {
  await ctx.close();
});

/** A purchase whose body (100 bytes announced) comes a byte every 200 ms: a request held open for 20 s. */
async function holdRequestOpen(url: string): Promise<void> {
  const { port } = new URL(url);
  const socket = connect({ host: '127.0.0.1', port: Number(port) });
  sockets.push(socket);
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /api/sales/1/purchase HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${buyerToken('slow-buyer')}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
  );
  const drip = setInterval(() => (socket.destroyed ? clearInterval(drip) : socket.write(' ')), 200);
  // Let the gateway take the request in before the test signals it.
  await sleep(300);
}

/** Running: not gone, and not a zombie waiting for a parent that will never reap it. */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** A purchase over a connection of its own, so that the cluster's round-robin spreads them. */
function purchase(url: string, saleId: number, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/sales/${saleId}/purchase`,
      { method: 'POST', agent: false, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function scrape(metricsPort: unknown): Promise<{ status: number; lines: string[] }> {
  const res = await fetch(`http://127.0.0.1:${String(metricsPort)}/metrics`);
  return { status: res.status, lines: (await res.text()).split('\n') };
}

async function listeningLines(gateway: AppProcess, count: number): Promise<Record<string, unknown>[]> {
  await expect
    .poll(() => gateway.logs.filter((l) => l.msg === 'gateway listening').length, { timeout: 60_000 })
    .toBeGreaterThanOrEqual(count);
  const lines = gateway.logs.filter((l) => l.msg === 'gateway listening');
  expect(lines).toHaveLength(count);
  return lines;
}

async function stopWatch(gateway: AppProcess, signal: NodeJS.Signals): Promise<{ status: number | NodeJS.Signals; ms: number }> {
  const started = Date.now();
  const status = await gateway.kill(signal);
  return { status, ms: Date.now() - started };
}

describe('a gateway process stopping', () => {
  it('exits 0 at once on SIGTERM when nothing is in flight', async () => {
    const gateway = await spawnGateway({ ...env, SHUTDOWN_TIMEOUT_MS: '60000' });
    processes.push(gateway);

    const stopped = await stopWatch(gateway, 'SIGTERM');

    // Exit 0 is the stop finished (the deadline exits 1); at once, not at the deadline (half of it:
    // room for a busy machine).
    expect(stopped.status).toBe(0);
    expect(stopped.ms).toBeLessThan(30_000);
    expect(gateway.logs.map((l) => l.msg).slice(-2)).toEqual(['stopping', 'stopped']);
  });

  it('exits 1 at SHUTDOWN_TIMEOUT_MS when a client holds a request open past it', async () => {
    // Request timeouts far away: only the shutdown deadline can end the stop.
    const gateway = await spawnGateway({
      ...env,
      SHUTDOWN_TIMEOUT_MS: '1000',
      HTTP_HEADERS_TIMEOUT_MS: '60000',
      HTTP_REQUEST_TIMEOUT_MS: '60000',
    });
    processes.push(gateway);
    await holdRequestOpen(gateway.url);

    const stopped = await stopWatch(gateway, 'SIGTERM');

    // At the deadline, not when the held request times out a minute later (half of that: room for a busy machine).
    expect(stopped.status).toBe(1);
    expect(stopped.ms).toBeGreaterThanOrEqual(950);
    expect(stopped.ms).toBeLessThan(30_000);
    expect(gateway.logs.find((l) => l.level === 50)).toMatchObject({
      timeoutMs: 1000,
      msg: 'still stopping at the shutdown deadline (SHUTDOWN_TIMEOUT_MS), exiting now',
    });
  });
});

describe('a gateway stopping under a steady load of keep-alive connections (a rolling restart)', () => {
  // 16 connections, each sending purchases back to back and never opening a second one: the balancer's
  // pool. The gateway must answer every request sent, close each connection after a whole response
  // (Connection: close), say /readyz 503 while it still serves, and exit 0 long before the deadline.
  // Before the drain, a busy keep-alive connection was never idle when the server closed its idle ones:
  // the process stayed until SHUTDOWN_TIMEOUT_MS, exited 1, and the requests on those connections were cut.
  it.each([
    ['one gateway process', {}],
    ['GATEWAY_WORKERS=2', { GATEWAY_WORKERS: '2' }],
  ])('%s: SIGTERM cuts no request and exits 0 after the drain', async (_name, extra: NodeJS.ProcessEnv) => {
    const sale = await createLiveSale(ctx, { stock: 1_000_000 });
    const gateway = await spawnGateway({
      ...env,
      ...extra,
      SHUTDOWN_DRAIN_MS: '1500',
      SHUTDOWN_TIMEOUT_MS: '10000',
      RATE_LIMIT_PER_SECOND: '1000',
    });
    processes.push(gateway);
    if (extra.GATEWAY_WORKERS) await listeningLines(gateway, 2);
    const load = keepAliveLoad(gateway.url, sale.id, 16, `rolling-${extra.GATEWAY_WORKERS ?? '1'}`);
    loads.push(load);
    await sleep(1000);
    const readiness = pollStatus(`${gateway.url}/readyz`, 50);
    const liveness = pollStatus(`${gateway.url}/healthz`, 50);

    load.markSignal();
    const stopped = stopWatch(gateway, 'SIGTERM');
    const ends = await load.ended;
    const { status, ms } = await stopped;
    readiness.stop();
    liveness.stop();

    expect(ends.filter((end) => end.cut !== undefined)).toEqual([]);
    expect(ends.every((end) => end.closedByServer)).toBe(true);
    // Every request answered: accepted, or (a Redis command past its 1 s deadline on a loaded box) a 503
    // with Retry-After, which is an answer, not a cut. Most are accepted.
    expect(ends.flatMap((end) => Object.keys(end.statuses)).filter((status) => status !== '202' && status !== '503')).toEqual([]);
    expect(ends.every((end) => (end.statuses[202] ?? 0) > 0)).toBe(true);
    // The load went on after the signal, every connection answered at least once more (with its close).
    expect(ends.every((end) => end.answeredAfterSignal >= 1)).toBe(true);
    expect(readiness.seen.some((probe) => probe.status === 503 && probe.body.includes('stopping'))).toBe(true);
    // A balancer checking liveness (infra/haproxy.cfg) sees it in /healthz's body.
    expect(liveness.seen.some((probe) => probe.status === 200 && probe.body === '{"status":"stopping"}')).toBe(true);
    expect(status).toBe(0);
    // The drain (1.5 s), then whatever is in flight: far from the 10 s deadline (generous for a loaded box).
    expect(ms).toBeGreaterThanOrEqual(1400);
    expect(ms).toBeLessThan(8000);
    expect(gateway.logs.some((l) => typeof l.msg === 'string' && l.msg.includes('shutdown deadline'))).toBe(false);
  });
});

describe('the metrics of a gateway', () => {
  it('are served on METRICS_PORT, named in the listening line; /metrics on PORT is a 404 like any unknown route', async () => {
    const gateway = await spawnGateway(env);
    processes.push(gateway);
    const { port, metricsPort } = gateway.logs.find((l) => l.msg === 'gateway listening')!;
    const sale = await createLiveSale(ctx, { stock: 5 });
    expect(await purchase(gateway.url, sale.id, buyerToken('metrics-port-buyer'))).toBe(202);

    const scraped = await scrape(metricsPort);

    expect(metricsPort).toEqual(expect.any(Number));
    expect(metricsPort).not.toBe(port);
    expect(scraped.status).toBe(200);
    expect(scraped.lines).toContain('flashsale_purchases_total{outcome="reserved"} 1');
    await expectProblem(await fetch(`${gateway.url}/metrics`), 404, 'NOT_FOUND', 'no route for GET /metrics');
    expect(await (await fetch(`http://127.0.0.1:${String(metricsPort)}/healthz`)).json()).toEqual({ status: 'ok' });
  });

  it('a METRICS_PORT already taken: says so, and serves buyers anyway', async () => {
    const squatter = createServer().listen(0);
    await once(squatter, 'listening');
    try {
      const taken = (squatter.address() as AddressInfo).port;
      const gateway = await spawnGateway({ ...env, METRICS_PORT: String(taken) });
      processes.push(gateway);

      expect(
        gateway.logs.find((l) => l.msg === 'metrics port unavailable: this gateway serves no /metrics (give it its own METRICS_PORT)'),
      ).toMatchObject({ level: 50, port: taken });
      expect(gateway.logs.find((l) => l.msg === 'gateway listening')).not.toHaveProperty('metricsPort');
      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    } finally {
      squatter.close();
    }
  });

  it('with GATEWAY_WORKERS=2: one METRICS_PORT, bound by the supervisor, serving the sum of both processes', async () => {
    const supervisor = await spawnGateway({ ...env, GATEWAY_WORKERS: '2' });
    processes.push(supervisor);
    const listening = await listeningLines(supervisor, 2);
    const sale = await createLiveSale(ctx, { stock: 10 });
    // Four connections, one purchase each: the round-robin gives each process two.
    for (let i = 0; i < 4; i += 1) expect(await purchase(supervisor.url, sale.id, buyerToken(`cluster-buyer-${i}`))).toBe(202);

    const scraped = await scrape(listening[0]!.metricsPort);

    expect(new Set(listening.map((l) => l.pid)).size).toBe(2);
    expect(listening.map((l) => l.metricsPort)).toEqual([listening[0]!.metricsPort, listening[0]!.metricsPort]);
    expect(scraped.status).toBe(200);
    expect(scraped.lines).toContain('flashsale_purchases_total{outcome="reserved"} 4');
    expect(scraped.lines).toContain('flashsale_purchase_duration_seconds_count 4');
    expect((await fetch(`${supervisor.url}/metrics`)).status).toBe(404);

    // Each process counted its own two: once one is gone (and replaced), the sum is the other's.
    process.kill(listening[0]!.pid as number, 'SIGKILL');
    await listeningLines(supervisor, 3);
    expect((await scrape(listening[0]!.metricsPort)).lines).toContain('flashsale_purchases_total{outcome="reserved"} 2');
    expect(await supervisor.kill('SIGTERM')).toBe(0);
  });
});

describe('the GATEWAY_WORKERS supervisor', () => {
  it('gives up and exits 1 when its gateway processes keep dying before they listen, waiting longer before each new one', async () => {
    // A genuine start failure: PORT is held by another program. The processes of a cluster listen
    // through the supervisor, whose bind fails, and each of them dies with EADDRINUSE; the supervisor
    // binds nothing itself, so it lives on to retry.
    const squatter = createServer().listen(0);
    await once(squatter, 'listening');
    try {
      const taken = (squatter.address() as AddressInfo).port;
      const supervisor = spawnApp('gateway', { ...env, PORT: String(taken), METRICS_PORT: '0', GATEWAY_WORKERS: '2' });
      processes.push(supervisor);

      // Five starts and four waits take seconds; the bound only stands for "never gives up".
      const status = await Promise.race([supervisor.exited, sleep(180_000).then(() => 'still running after 3 minutes')]);

      expect(status).toBe(1);
      const deaths = supervisor.logs.filter((l) => l.msg === 'gateway process died, starting another');
      expect(deaths.map((l) => l.restartInMs)).toEqual([100, 200, 400, 800]);
      expect(deaths.map((l) => [l.code, l.listened])).toEqual(Array(4).fill([1, false]));
      expect(supervisor.logs.find((l) => l.msg === 'gateway processes keep dying before they listen, giving up')).toMatchObject({
        level: 60,
        code: 1,
        startFailures: 5,
      });
      const cannotListen = supervisor.logs.filter((l) => l.msg === 'gateway cannot listen');
      expect(cannotListen.length).toBeGreaterThanOrEqual(5);
      expect(cannotListen.every((l) => (l.err as { code?: string }).code === 'EADDRINUSE' && l.port === taken)).toBe(true);
    } finally {
      squatter.close();
    }
  });

  it('replaces a gateway process that was killed, and goes on serving', async () => {
    const supervisor = await spawnGateway({ ...env, GATEWAY_WORKERS: '2' });
    processes.push(supervisor);
    const [victim] = await listeningLines(supervisor, 2);

    process.kill(victim!.pid as number, 'SIGKILL');
    const replaced = await listeningLines(supervisor, 3);

    expect(supervisor.logs.find((l) => l.msg === 'gateway process died, starting another')).toMatchObject({
      level: 50,
      signal: 'SIGKILL',
      listened: true,
      restartInMs: 100,
    });
    expect(replaced[2]!.pid).not.toBe(victim!.pid);
    expect((await fetch(`${supervisor.url}/healthz`)).status).toBe(200);
  });

  it('on SIGTERM, SIGKILLs a gateway process still running at SHUTDOWN_TIMEOUT_MS and exits 1', async () => {
    // A deadline the healthy process meets on a busy machine too; the hung one never does.
    const supervisor = await spawnGateway({ ...env, GATEWAY_WORKERS: '2', SHUTDOWN_TIMEOUT_MS: '10000' });
    processes.push(supervisor);
    const [hung, healthy] = (await listeningLines(supervisor, 2)).map((l) => l.pid as number);
    // Stopped, it can handle no signal: as hung as a process gets.
    frozen.push(hung!);
    process.kill(hung!, 'SIGSTOP');

    const stopped = await stopWatch(supervisor, 'SIGTERM');

    // At the deadline: a stopped process would otherwise hold the supervisor for good.
    expect(stopped.status).toBe(1);
    expect(stopped.ms).toBeGreaterThanOrEqual(9950);
    expect(stopped.ms).toBeLessThan(60_000);
    expect(
      supervisor.logs.find((l) => l.msg === 'gateway processes still running at the shutdown deadline (SHUTDOWN_TIMEOUT_MS), killing them'),
    ).toMatchObject({
      level: 50,
      timeoutMs: 10_000,
      pids: [hung],
    });
    // The other one finished its own stop in time. Its lines share the supervisor's stdout, which the
    // harness may still be reading when the supervisor's exit is seen: read until they are there.
    // (Failed once in CI with no line of that process after 'gateway listening'; not reproduced: the whole
    // log is in the failure, to tell a silent death and its replacement from lines not read.)
    await expect
      .poll(
        () =>
          supervisor.logs
            .filter((l) => l.pid === healthy)
            .map((l) => l.msg)
            .slice(-2),
        {
          timeout: 15_000,
          message: `the healthy process ${healthy}'s last lines; the supervisor's whole log:\n${supervisor.logs.map((l) => JSON.stringify(l)).join('\n')}`,
        },
      )
      .toEqual(['stopping', 'stopped']);
    await expect.poll(() => isRunning(hung!), { timeout: 60_000 }).toBe(false);
  });
});
