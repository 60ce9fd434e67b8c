import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnGateway, type AppProcess } from '@flashsale/harness';
import { createTestContext, type TestContext } from '../support/context.ts';

// A real gateway process flooded with connections that never send a byte, from one address (127.0.0.1),
// while a buyer comes from another (127.0.0.2: on Linux all of 127.0.0.0/8 is loopback).
//
// The gateway runs with an open-file limit of 400, lowered with prlimit(1) once it has started: 1024 is
// the default of many hosts, and the test's flood then needs hundreds of sockets, not 20,000. Without the
// guards the flood takes every descriptor: accept() fails with EMFILE, libuv accepts and closes every new
// connection to keep the listen queue moving, so each buyer is hung up on (and the process can open no
// connection to Redis or MySQL either) until the flood times out, a minute later with Node's defaults.

const OPEN_FILES = 400;
const FLOOD = 600;

let ctx: TestContext;
let gateway: (AppProcess & { url: string }) | undefined;
const flood: Socket[] = [];
beforeAll(() => {
  ctx = createTestContext();
});
afterEach(async () => {
  for (const socket of flood.splice(0)) socket.destroy();
  await gateway?.kill('SIGKILL');
  gateway = undefined;
});
afterAll(async () => {
  await ctx.close();
});

async function spawnFlooded(env: NodeJS.ProcessEnv): Promise<AppProcess & { url: string }> {
  gateway = await spawnGateway({
    REDIS_PREFIX: ctx.config.REDIS_PREFIX,
    DATABASE_URL: ctx.config.DATABASE_URL,
    REDIS_URL: ctx.config.REDIS_URL,
    // Long enough that no timeout rescues the gateway during the test: only the connection limits do.
    HTTP_HEADERS_TIMEOUT_MS: '60000',
    HTTP_REQUEST_TIMEOUT_MS: '60000',
    ...env,
  });
  return gateway;
}

async function spawnLimited(env: NodeJS.ProcessEnv): Promise<AppProcess & { url: string }> {
  const spawned = await spawnFlooded(env);
  execFileSync('prlimit', ['--pid', String(spawned.child.pid), `--nofile=${OPEN_FILES}:${OPEN_FILES}`]);
  return spawned;
}

/** How long a probe waits for an answer: generous, so only a connection shut out goes unanswered. */
const ANSWER_TIMEOUT_MS = 20_000;

/** CPU time (user + system) a process spends over the next `ms`, in milliseconds. */
async function cpuMsOver(pid: number, ms: number): Promise<number> {
  // utime and stime, fields 14 and 15 of /proc/<pid>/stat, in clock ticks of 10 ms.
  const ticks = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  const before = ticks();
  await sleep(ms);
  return (ticks() - before) * 10;
}

/**
 * Opens `count` idle connections from 127.0.0.1 (or, with `addresses`, from 127.0.1.1 up, one address
 * per connection up to that many); resolves once each has connected (or failed to).
 */
async function floodWith(port: number, count: number, addresses = 1): Promise<{ open: () => number }> {
  let open = 0;
  const opening = Array.from({ length: count }, (_, i) => {
    const localAddress = addresses === 1 ? '127.0.0.1' : `127.0.${1 + Math.floor((i % addresses) / 250)}.${1 + ((i % addresses) % 250)}`;
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    flood.push(socket);
    socket.on('error', () => {});
    return new Promise<void>((resolve) => {
      socket.once('connect', () => {
        open += 1;
        socket.once('close', () => (open -= 1));
        resolve();
      });
      socket.once('close', () => resolve());
    });
  });
  await Promise.all(opening);
  return { open: () => open };
}

async function untilOpen(flooding: { open: () => number }, count: number): Promise<void> {
  await expect.poll(() => flooding.open(), { timeout: 60_000, interval: 25 }).toBe(count);
  // And it stays there: no connection closed late, none let in late.
  await sleep(300);
  expect(flooding.open()).toBe(count);
}

function healthzFrom(url: string, localAddress: string): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = get(`${url}/healthz`, { localAddress, agent: false, timeout: ANSWER_TIMEOUT_MS }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: Date.now() - started }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}

describe('a flood of idle connections against a gateway process', () => {
  it('from one address: it holds MAX_CONNECTIONS_PER_ADDRESS of them, and a buyer from another address is answered at once', async () => {
    const { url } = await spawnLimited({ MAX_CONNECTIONS_PER_ADDRESS: '50' });
    const flooding = await floodWith(Number(new URL(url).port), FLOOD);

    await untilOpen(flooding, 50);
    const buyer = await healthzFrom(url, '127.0.0.2');

    // Answered while the flood holds its connections (a buyer shut out would get no answer at all).
    expect(buyer.status).toBe(200);
    expect(flooding.open()).toBe(50);
    expect(gateway!.child.exitCode).toBeNull();
    expect(gateway!.logs.find((l) => l.msg === 'connections refused')).toMatchObject({
      level: 40,
      refused: { overMaxConnectionsPerAddress: 1 },
      lastAddress: '::ffff:127.0.0.1',
    });
  });

  it('from everywhere (no per-address cap): it holds MAX_CONNECTIONS, refuses the rest, and serves again once the flood goes', async () => {
    const { url } = await spawnLimited({ MAX_CONNECTIONS_PER_ADDRESS: '0', MAX_CONNECTIONS: '200' });
    const flooding = await floodWith(Number(new URL(url).port), FLOOD);

    await untilOpen(flooding, 200);
    await expect(healthzFrom(url, '127.0.0.2')).rejects.toThrow();
    for (const socket of flood.splice(0)) socket.destroy();
    // Refused (the connection closed) until the gateway has counted the flood's connections out.
    await expect
      .poll(
        () =>
          healthzFrom(url, '127.0.0.2').then(
            (res) => res.status,
            () => 'refused',
          ),
        { timeout: 60_000, interval: 25 },
      )
      .toBe(200);
    expect(gateway!.child.exitCode).toBeNull();
    expect(gateway!.logs.find((l) => l.msg === 'connection limits')).toMatchObject({
      maxConnections: 200,
      maxConnectionsFrom: 'MAX_CONNECTIONS',
      maxConnectionsPerAddress: 0,
    });
  });

  it("against its metrics port, from many addresses: it holds METRICS_MAX_CONNECTIONS there, out of PORT's share, and buyers are answered", async () => {
    // Before the cap, 1,000 idle connections to the metrics port took every descriptor of a process
    // limited to 1,024, and every buyer connection on PORT failed. Now the metrics port holds 32 (a
    // quarter of them per address) and the descriptors left are PORT's.
    const spawned = await spawnLimited({ MAX_CONNECTIONS_PER_ADDRESS: '0' });
    const metricsPort = Number(spawned.logs.find((l) => l.msg === 'gateway listening')!.metricsPort);
    const flooding = await floodWith(metricsPort, FLOOD, FLOOD);

    await untilOpen(flooding, 32);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => healthzFrom(spawned.url, `127.0.0.${2 + i}`)));

    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(spawned.child.exitCode).toBeNull();
    expect(spawned.logs.find((l) => l.msg === 'metrics port: connections refused')).toMatchObject({
      level: 40,
      refused: { overMaxConnections: 1 },
    });
  });

  it('under GATEWAY_WORKERS=2: no process holds more than MAX_CONNECTIONS, the rest are closed, and nothing spins', async () => {
    // node:cluster hands each connection to a process; one that says "full" has it handed on, back and
    // forth while every process is full, unless the process takes it and closes it. Which process gets
    // how many is node:cluster's round robin (a process busy starting up may be handed few): what must
    // hold is that none holds more than its 20, the supervisor holds none, and nobody spins.
    const supervisor = await spawnFlooded({ GATEWAY_WORKERS: '2', MAX_CONNECTIONS: '20', MAX_CONNECTIONS_PER_ADDRESS: '0' });
    await expect
      .poll(() => supervisor.logs.filter((l) => l.msg === 'gateway listening').length, { timeout: 60_000 })
      .toBeGreaterThanOrEqual(2);
    const flooding = await floodWith(Number(new URL(supervisor.url).port), 100);
    await sleep(1000);

    const children = [...new Set(supervisor.logs.filter((l) => l.msg === 'gateway listening').map((l) => Number(l.pid)))];
    const [supervisorCpuMs, ...childrenCpuMs] = await Promise.all([supervisor.child.pid!, ...children].map((pid) => cpuMsOver(pid, 1000)));

    expect(children).toHaveLength(2);
    expect(flooding.open()).toBeGreaterThanOrEqual(20);
    expect(flooding.open()).toBeLessThanOrEqual(40);
    expect(supervisor.logs.some((l) => l.msg === 'connections refused')).toBe(true);
    expect(supervisorCpuMs).toBeLessThan(200);
    for (const ms of childrenCpuMs) expect(ms).toBeLessThan(200);
  });
});
