import { once } from 'node:events';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy } from './fault-proxy.ts';
import { startRedisServer, type RedisServer } from './redis-server.ts';

// The link faults of the fault matrix, on a real redis-server behind the proxy: each changes what a
// client sees exactly as stated, and lifting it restores the link.

let server: RedisServer;
let proxy: FaultProxy;
beforeAll(async () => {
  server = await startRedisServer();
  proxy = await startFaultProxy(server.port);
});
afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

const client = () => {
  const redis = new Redis({ port: proxy.port, maxRetriesPerRequest: 0, retryStrategy: () => null, commandTimeout: 2000 });
  redis.on('error', () => undefined);
  return redis;
};
const timed = async <T>(work: () => Promise<T>) => {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
};

describe('the fault proxy', () => {
  it('latency: every reply 200-500 ms later each way, in order; lifted, at once again', async () => {
    const redis = client();
    try {
      await redis.ping();
      proxy.setFault({ kind: 'latency', minMs: 200, maxMs: 500 });
      const slow = await timed(() => Promise.all([redis.set('k', '1'), redis.incr('k'), redis.get('k')]));
      expect(slow.value).toEqual(['OK', 2, '2']);
      // Request and reply each delayed at least 200 ms.
      expect(slow.ms).toBeGreaterThanOrEqual(400);
      proxy.setFault(null);
      expect((await timed(() => redis.ping())).ms).toBeLessThan(200);
    } finally {
      redis.disconnect();
    }
  });

  it('blackhole: connections accepted and kept, nothing answered; lifted, a new connection is served', async () => {
    proxy.setFault({ kind: 'blackhole' });
    const held = client();
    try {
      await expect(held.ping()).rejects.toThrow(/timed out/i);
    } finally {
      held.disconnect();
      proxy.setFault(null);
    }
    const fresh = client();
    try {
      expect(await fresh.ping()).toBe('PONG');
    } finally {
      fresh.disconnect();
    }
  });

  it('blackhole lifted: a connection whose bytes it dropped is closed (never carried on with a hole), an untouched one is kept', async () => {
    const connectRaw = async () => {
      const socket = connect(proxy.port, '127.0.0.1');
      await once(socket, 'connect');
      socket.on('error', () => undefined);
      return socket;
    };
    const [holed, untouched] = [await connectRaw(), await connectRaw()];
    try {
      proxy.setFault({ kind: 'blackhole' });
      holed.write('PING\r\n');
      // The proxy (this process) has the chunk, and drops it, once its event loop has turned.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const closed = once(holed, 'close');
      proxy.setFault(null);
      await closed;
      untouched.write('PING\r\n');
      const [reply] = (await once(untouched, 'data')) as [Buffer];
      expect(reply.toString()).toBe('+PONG\r\n');
    } finally {
      proxy.setFault(null);
      holed.destroy();
      untouched.destroy();
    }
  });

  it('reset-mid-reply: part of a reply arrives, then the connection is reset', async () => {
    const redis = client();
    try {
      await redis.set('big', 'x'.repeat(200_000));
      proxy.setFault({ kind: 'reset-mid-reply' });
      await expect(redis.get('big')).rejects.toThrow(/closed|reset/i);
    } finally {
      proxy.setFault(null);
      redis.disconnect();
    }
  });
});
