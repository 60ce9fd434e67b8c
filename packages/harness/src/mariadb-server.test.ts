import { createServer } from 'node:net';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { createConnection } from 'mariadb';
import { installedTemplate, startMariaDbServer } from './mariadb-server.ts';

/** Runs `body` with a `mariadb-install-db` of `script` first on PATH. */
function withInstaller<T>(script: string, body: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'fake-install-db-'));
  const path = process.env.PATH;
  try {
    writeFileSync(join(dir, 'mariadb-install-db'), `#!/bin/sh\n${script}\n`);
    chmodSync(join(dir, 'mariadb-install-db'), 0o755);
    process.env.PATH = `${dir}:${path}`;
    return body(dir);
  } finally {
    process.env.PATH = path;
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the data directory template', () => {
  it('runs a failed mariadb-install-db once more, saying so with its output', () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      // Fails the first time (no marker yet), then does what the real one does.
      const template = withInstaller(
        `m="$(dirname "$0")/failed-once"; if [ ! -e "$m" ]; then touch "$m"; echo "Installation of system tables failed!"; exit 1; fi; PATH="\${PATH#*:}" exec mariadb-install-db "$@"`,
        () => installedTemplate(),
      );
      expect(existsSync(join(template, 'mysql'))).toBe(true);
      expect(stderr.mock.calls.map(([text]) => String(text)).join('')).toMatch(
        /mariadb-install-db failed \(exit 1, signal null\); running it once more\. Its output:\nInstallation of system tables failed!/,
      );
    } finally {
      stderr.mockRestore();
    }
  });

  it('gives up on a second failure, with the output of both', () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(() => withInstaller('echo "no room: $$"; exit 1', () => installedTemplate())).toThrow(
        /mariadb-install-db failed twice:\nno room: \d+\n\nand then:\nno room: \d+/,
      );
    } finally {
      stderr.mockRestore();
    }
  });
});

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
