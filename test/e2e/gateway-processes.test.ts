import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buyerToken, spawnGateway, type AppProcess } from '@flashsale/harness';
import { createTestContext, type TestContext } from '../support/context.ts';

// Real gateway processes: how they stop.

let ctx: TestContext;
let env: NodeJS.ProcessEnv;
const processes: AppProcess[] = [];
const sockets: Socket[] = [];
beforeAll(() => {
  ctx = createTestContext();
  env = { REDIS_PREFIX: ctx.config.REDIS_PREFIX, DATABASE_URL: ctx.config.DATABASE_URL, REDIS_URL: ctx.config.REDIS_URL };
});
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
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
    `POST /api/sales/1/purchase HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${await buyerToken('slow-buyer')}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
  );
  const drip = setInterval(() => (socket.destroyed ? clearInterval(drip) : socket.write(' ')), 200);
  // Let the gateway take the request in before the test signals it.
  await sleep(300);
}

async function stopWatch(gateway: AppProcess, signal: NodeJS.Signals): Promise<{ status: number | NodeJS.Signals; ms: number }> {
  const started = Date.now();
  const status = await gateway.kill(signal);
  return { status, ms: Date.now() - started };
}

describe('a gateway process stopping', () => {
  it('exits 0 at once on SIGTERM when nothing is in flight', async () => {
    const gateway = await spawnGateway({ ...env, SHUTDOWN_TIMEOUT_MS: '1000' });
    processes.push(gateway);

    const stopped = await stopWatch(gateway, 'SIGTERM');

    expect(stopped.status).toBe(0);
    expect(stopped.ms).toBeLessThan(1000);
    expect(gateway.logs.map((l) => l.msg).slice(-2)).toEqual(['stopping', 'stopped']);
  });

  it('exits 1 at SHUTDOWN_TIMEOUT_MS when a client holds a request open past it', async () => {
    // Request timeouts far away: only the shutdown deadline can end the stop.
    const gateway = await spawnGateway({ ...env, SHUTDOWN_TIMEOUT_MS: '1000', HTTP_HEADERS_TIMEOUT_MS: '60000', HTTP_REQUEST_TIMEOUT_MS: '60000' });
    processes.push(gateway);
    await holdRequestOpen(gateway.url);

    const stopped = await stopWatch(gateway, 'SIGTERM');

    expect(stopped.status).toBe(1);
    expect(stopped.ms).toBeGreaterThanOrEqual(950);
    expect(stopped.ms).toBeLessThan(2500);
    expect(gateway.logs.find((l) => l.level === 50)).toMatchObject({ timeoutMs: 1000, msg: 'still stopping at the shutdown deadline (SHUTDOWN_TIMEOUT_MS), exiting now' });
  });
});
