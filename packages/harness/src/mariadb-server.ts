import { spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killChild } from './child-process.ts';
import { installHint } from './outside-tools.ts';
import { spawnInGroup } from './process-group.ts';
import { createConnection } from 'mariadb';
import { logTail, startOnFreePort, waitUntilServing } from './server-start.ts';

/**
 * A mariadbd of its own, on a free port with its own data directory, for runs that kill MySQL for real
 * (SIGKILL, then crash recovery on restart). Root with an empty password over TCP, like the machine's own.
 */
export interface MariaDbServer {
  port: number;
  /** DATABASE_URL for a database of this server (created by the migrator). */
  url(database: string): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface MariaDbServerOptions {
  /** Extra mariadbd arguments, e.g. `--max-connections=32` for a server with few connections to give. */
  args?: string[];
}

const START_TIMEOUT_MS = 120_000;

let template: string | undefined;

/**
 * A fresh data directory at `datadir`: a copy of one mariadb-install-db made once per process (about 2 s
 * each, against a fraction of that to copy; a test that starts a primary and its replicas makes several).
 * The copy is made before any server ever ran on the template, so it is byte for byte a fresh install.
 */
export function freshDataDirectory(datadir: string): void {
  template ??= installedTemplate();
  cpSync(template, datadir, { recursive: true });
}

/**
 * A data directory made by mariadb-install-db, removed when the process exits. An install that fails is
 * run once more, its output written to stderr first: one failed in about twenty runs of the Galera files
 * beside `stress-ng --cpu 2` (2026-11-30, its output not kept), and a second failure reports both.
 */
export function installedTemplate(): string {
  let firstFailure: string | undefined;
  for (;;) {
    const made = mkdtempSync(join(tmpdir(), 'flashsale-mariadb-template-'));
    const install = spawnSync(
      'mariadb-install-db',
      ['--no-defaults', `--datadir=${join(made, 'data')}`, '--user=root', '--skip-test-db', '--auth-root-authentication-method=normal'],
      { encoding: 'utf8' },
    );
    if (install.status === 0) {
      process.once('exit', () => rmSync(made, { recursive: true, force: true }));
      return join(made, 'data');
    }
    rmSync(made, { recursive: true, force: true });
    if (install.error)
      throw new Error(`mariadb-install-db could not be started (${install.error.message}); ${installHint('mariadb-install-db')}`);
    const output = `${install.stdout}${install.stderr}`;
    if (firstFailure !== undefined) throw new Error(`mariadb-install-db failed twice:\n${firstFailure}\nand then:\n${output}`);
    firstFailure = output;
    process.stderr.write(
      `mariadb-install-db failed (exit ${install.status}, signal ${install.signal}); running it once more. Its output:\n${output}\n`,
    );
  }
}

/** How much of the server's own log (its stderr) a failed start shows. */
const LOG_TAIL_CHARS = 2000;

export function startMariaDbServer(options: MariaDbServerOptions = {}): Promise<MariaDbServer> {
  return startOnFreePort((port) => mariaDbServerOnFreePort(port, options));
}

function mariaDbServerOnFreePort(port: number, options: MariaDbServerOptions): MariaDbServer {
  const dir = mkdtempSync(join(tmpdir(), 'flashsale-mariadb-'));
  const datadir = join(dir, 'data');
  freshDataDirectory(datadir);
  let child: ChildProcess | undefined;
  const server: MariaDbServer = {
    port,
    url: (database) => `mysql://root@127.0.0.1:${port}/${database}`,
    async start() {
      const started = spawnInGroup(
        'mariadbd',
        [
          '--no-defaults',
          `--datadir=${datadir}`,
          `--port=${port}`,
          `--socket=${join(dir, 'sock')}`,
          '--user=root',
          '--bind-address=127.0.0.1',
          '--skip-name-resolve',
          '--innodb-autoinc-lock-mode=2',
          ...(options.args ?? []),
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      child = started;
      // mariadbd logs to stderr; the last of it is what a failed start shows.
      const log = logTail(started.stderr, LOG_TAIL_CHARS);
      // Generous: on a busy machine crash recovery after a SIGKILL can take many seconds.
      await waitUntilServing(
        started,
        `mariadbd on ${port}`,
        START_TIMEOUT_MS,
        async () => {
          const connection = await createConnection({ host: '127.0.0.1', port, user: 'root', password: '', connectTimeout: 500 });
          const [row] = await connection.query<{ datadir: string }[]>('SELECT @@datadir AS datadir').finally(() => connection.end());
          const servedFrom = row!.datadir.replace(/\/$/, '');
          return servedFrom === datadir ? { kind: 'ours' } : { kind: 'another', what: `a mariadbd on ${servedFrom}` };
        },
        log,
      );
    },
    kill(signal = 'SIGKILL') {
      return killChild(child, signal);
    },
    async stop() {
      await server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}
