import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServer } from '@flashsale/harness';
import { createRedis, isRedisUnavailable } from './redis-client.ts';
import { commandsAwaitingDeadline, MIN_COMPACTION } from './command-deadlines.ts';

/** A local port nothing listens on (taken, then let go). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the deadline of a command (commandTimeoutMs) on a Redis Cluster', () => {
  // ioredis's Cluster keeps a command it has no node for in a queue of its own, where its node-level
  // commandTimeout never starts (ioredis issue #1604): without the deadline from issue, this waits for
  // as long as no node answers, and the test times out instead of seeing the error.
  it('fails a command that waits for a node that never answers, as Redis being unavailable', async () => {
    const redis = createRedis(
      { clusterNodes: [{ host: '127.0.0.1', port: await closedPort() }] },
      { commandTimeoutMs: 300, maxRetriesPerRequest: null },
    );
    try {
      const error = await redis.get('some-key').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect({ message: (error as Error).message, unavailable: isRedisUnavailable(error) }).toEqual({
        message: 'Command timed out',
        unavailable: true,
      });
    } finally {
      redis.disconnect();
    }
  });
});

describe('the deadline of a command (commandTimeoutMs) on one Redis', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    server.thaw();
    await server.stop();
  });

  it('fails a command the server does not answer within the deadline, not before it, and answers every command that came back in time', async () => {
    const redis = createRedis(server.url, { commandTimeoutMs: 400 });
    try {
      // Answered commands are dropped from the deadlines' queue: none of them fails later. Sent 100 at a
      // time, each hundred well within its deadline however busy the machine (3,000 at once took longer
      // than 400 ms to answer in a loaded CI run).
      const answered: string[] = [];
      for (let from = 0; from < 3000; from += 100) {
        answered.push(...(await Promise.all(Array.from({ length: 100 }, (_, i) => redis.set(`k${from + i}`, String(from + i))))));
      }
      expect(answered.length === 3000 && answered.every((reply) => reply === 'OK')).toBe(true);
      // An error reply stays that error; its deadline passing later changes nothing.
      const refused = await redis.call('no-such-command').then(
        () => undefined,
        (e: unknown) => (e as Error).message,
      );
      expect(refused).toMatch(/^ERR unknown command/);

      server.freeze();
      const issued = performance.now();
      const error = await redis.get('k1').then(
        () => undefined,
        (e: unknown) => e,
      );
      const waited = performance.now() - issued;
      expect({ message: (error as Error).message, unavailable: isRedisUnavailable(error) }).toEqual({
        message: 'Command timed out',
        unavailable: true,
      });
      expect(waited).toBeGreaterThanOrEqual(399);
      server.thaw();
      // The connection is the same one: what the frozen server read meanwhile is answered, in order.
      expect(await redis.get('k2')).toBe('2');
    } finally {
      server.thaw();
      redis.disconnect();
    }
  });

  it('lets go of the commands answered behind one answered with an error, long before its deadline', async () => {
    const redis = createRedis(server.url, { commandTimeoutMs: 60_000 });
    try {
      // An error reply is not marked answered by ioredis: it stays until its deadline, a minute here.
      const refused = redis.call('no-such-command').then(
        () => 'answered',
        (e: unknown) => (e as Error).message,
      );
      for (let from = 0; from < 3000; from += 100) {
        await Promise.all(Array.from({ length: 100 }, (_, i) => redis.set(`behind${from + i}`, '1')));
      }
      expect(await refused).toMatch(/^ERR unknown command/);
      // A few sweeps later: the error reply and fewer than one compaction's worth of answered commands
      // behind it, not the 3,000 (kept alive for the whole minute, a crowd's commands were promoted).
      await new Promise((resolve) => setTimeout(resolve, 100));
      const held = commandsAwaitingDeadline(redis)!;
      expect(held).toBeGreaterThanOrEqual(1);
      expect(held).toBeLessThanOrEqual(MIN_COMPACTION);
    } finally {
      redis.disconnect();
    }
  });

  it('gives a command issued while the server cannot be reached its deadline from the call', async () => {
    const redis = createRedis({ url: `redis://127.0.0.1:${await closedPort()}` }, { commandTimeoutMs: 300, maxRetriesPerRequest: null });
    try {
      const issued = performance.now();
      const error = await redis.get('some-key').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect({ message: (error as Error).message, atLeastTheDeadline: performance.now() - issued >= 299 }).toEqual({
        message: 'Command timed out',
        atLeastTheDeadline: true,
      });
    } finally {
      redis.disconnect();
    }
  });

  it('leaves a command without a deadline when none is set', async () => {
    const redis = createRedis(server.url);
    try {
      server.freeze();
      const outcome = Promise.race([
        redis.get('k1').then(() => 'answered'),
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 700)),
      ]);
      expect(await outcome).toBe('still waiting');
      server.thaw();
      expect(await redis.get('k3')).toBe('3');
    } finally {
      server.thaw();
      redis.disconnect();
    }
  });
});
