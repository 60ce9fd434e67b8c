import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { killChild } from './child-process.ts';
import { spawnInGroup } from './process-group.ts';
import { askRedis, startRedisServer } from './redis-server.ts';

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

  it('refuses, at once, a restart on a port another redis-server took meanwhile: the one answering is not the one started', async () => {
    const server = await startRedisServer();
    await server.kill('SIGKILL');
    const squatter = spawnInGroup(
      'redis-server',
      ['--port', String(server.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    try {
      while ((await askRedis(server.url, (r) => r.ping()).catch(() => null)) !== 'PONG') await sleep(20);
      await expect(server.start()).rejects.toThrow(/exited \(1\) before it answered|is served by another server \(process/);
    } finally {
      await killChild(squatter, 'SIGKILL');
      await server.stop();
    }
  });
});
