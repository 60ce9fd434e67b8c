import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createConnection } from 'mariadb';
import { startMariaDbServer } from './mariadb-server.ts';

describe('startMariaDbServer', () => {
  it('gives up at once on a mariadbd that exits before it answers, after trying fresh ports, and shows its log', async () => {
    const began = performance.now();
    // An option mariadbd refuses: it exits with status 1 at every attempt.
    await expect(startMariaDbServer({ args: ['--no-such-option=1'] })).rejects.toThrow(
      /exited \(\d+\) before it answered; its log ends:[\s\S]*unknown (option|variable)/,
    );
    // Far below the 120 s a server that never answers is given: an exit is not waited out.
    expect(performance.now() - began).toBeLessThan(60_000);
  });

  it('starts a server of its own that accepts connections, and starts it again on its port after a SIGKILL', async () => {
    const server = await startMariaDbServer();
    try {
      const ask = async () => {
        const connection = await createConnection({ host: '127.0.0.1', port: server.port, user: 'root', password: '' });
        try {
          return Number((await connection.query<{ port: number }[]>('SELECT @@port AS port'))[0]!.port);
        } finally {
          await connection.end();
        }
      };
      expect(await ask()).toBe(server.port);
      await server.kill('SIGKILL');
      await server.start();
      expect(await ask()).toBe(server.port);
    } finally {
      await server.stop();
    }
  });

  it('names a port another process took before a restart, at once', async () => {
    const server = await startMariaDbServer();
    const squatter = createServer();
    try {
      await server.kill('SIGKILL');
      await new Promise<void>((resolve, reject) => squatter.once('error', reject).listen(server.port, '127.0.0.1', resolve));
      await expect(server.start()).rejects.toThrow(/exited \(1\) before it answered; its log ends:[\s\S]*Address already in use/);
    } finally {
      squatter.close();
      await server.stop();
    }
  });
});
