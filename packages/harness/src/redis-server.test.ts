import { describe, expect, it } from 'vitest';
import { startRedisServer } from './redis-server.ts';

describe('startRedisServer', () => {
  it('gives up at once on a redis-server that exits before answering, after trying fresh ports', async () => {
    const began = performance.now();
    // An option redis-server refuses: it exits with status 1 at every attempt.
    await expect(startRedisServer({ args: ['--no-such-option', 'yes'] })).rejects.toThrow(/exited \(1\) before it answered/);
    // Far below the 60 s a server that never answers is given: an exit is not waited out.
    expect(performance.now() - began).toBeLessThan(30_000);
  });

  it('starts a server that answers', async () => {
    const server = await startRedisServer();
    try {
      expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
    } finally {
      await server.stop();
    }
  });
});
