import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createRedis, isRedisUnavailable } from './redis-client.ts';

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
    const redis = createRedis({ clusterNodes: [{ host: '127.0.0.1', port: await closedPort() }] }, { commandTimeoutMs: 300, maxRetriesPerRequest: null });
    try {
      const error = await redis.get('some-key').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect({ message: (error as Error).message, unavailable: isRedisUnavailable(error) }).toEqual({ message: 'Command timed out', unavailable: true });
    } finally {
      redis.disconnect();
    }
  });
});
