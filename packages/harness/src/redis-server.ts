import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killChild } from './child-process.ts';
import { startOnFreePort, waitUntilServing, type ProbeResult } from './server-start.ts';
import { spawnInGroup } from './process-group.ts';
import { Redis } from 'ioredis';

/** Runs `command` on a connection of its own to `url`, opened for it and closed after (no retries). */
export async function askRedis<T>(url: string, command: (redis: Redis) => Promise<T>, connectTimeoutMs = 2000): Promise<T> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: connectTimeoutMs });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await command(redis);
  } finally {
    redis.disconnect();
  }
}

/**
 * Whether the server answering at `url` is the process `pid` (INFO's process_id: CONFIG may be renamed
 * away, as a managed Redis does), and ready: with AOF, it answers LOADING until the file is replayed.
 */
export async function servedBy(url: string, pid: number | undefined): Promise<ProbeResult> {
  return askRedis(url, async (redis) => {
    const servedFrom = Number(/^process_id:(\d+)/m.exec(await redis.info('server'))?.[1]);
    if (servedFrom !== pid) return { kind: 'another', what: `process ${servedFrom}` };
    return (await redis.ping()) === 'PONG' ? { kind: 'ours' } : { kind: 'not-yet' };
  });
}

export interface RedisServerOptions {
  /** `always`, `everysec`, or undefined for no persistence at all (like the machine's own Redis). */
  appendfsync?: 'always' | 'everysec';
  /** More redis-server arguments (a cluster node's, say). */
  args?: string[];
  /**
   * A command that runs redis-server, put before it (`['valgrind', '--tool=callgrind']`, say: the
   * benchmark counts the reserve script's instructions that way). The tool must keep redis-server's pid.
   */
  wrapper?: string[];
}

/**
 * A redis-server of a test's own, on a free port with its own data directory, that the test may kill
 * (SIGKILL: no chance to save anything) and start again on the same port and directory.
 */
export interface RedisServer {
  url: string;
  port: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open and nothing answers, like a hung host. */
  freeze(): void;
  /** Lets a frozen server run again (SIGCONT); it then serves what its clients sent meanwhile. */
  thaw(): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 60_000;
export function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  return startOnFreePort((port) => redisServerOnFreePort(port, options));
}

function redisServerOnFreePort(port: number, options: RedisServerOptions): RedisServer {
  const dir = mkdtempSync(join(tmpdir(), 'flashsale-redis-'));
  // A replica's full sync starts at once: Redis 7 waits repl-diskless-sync-delay (5 s) for more replicas
  // to share it, which every start and every rejoin of a replicated test would sit out.
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--maxmemory-policy',
    'noeviction',
    '--repl-diskless-sync-delay',
    '0',
  ];
  args.push(...(options.appendfsync ? ['--appendonly', 'yes', '--appendfsync', options.appendfsync] : ['--appendonly', 'no']));
  args.push(...(options.args ?? []).map((arg) => arg.replaceAll('{dir}', dir)));
  let child: ChildProcess | undefined;
  const url = `redis://127.0.0.1:${port}`;

  const server: RedisServer = {
    url,
    port,
    async start() {
      // redis-server rewrites its process title, so the pid from spawn is the handle kept to kill it.
      const [command, ...commandArgs] = [...(options.wrapper ?? []), 'redis-server', ...args];
      const started = spawnInGroup(command!, commandArgs, { stdio: 'ignore' });
      child = started;
      // Generous: on a busy machine a start, or an AOF replay, can take seconds.
      await waitUntilServing(started, `redis-server on ${port}`, START_TIMEOUT_MS, () => servedBy(url, started.pid));
    },
    kill(signal = 'SIGKILL') {
      return killChild(child, signal);
    },
    freeze() {
      child?.kill('SIGSTOP');
    },
    thaw() {
      child?.kill('SIGCONT');
    },
    async stop() {
      server.thaw();
      await server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}
