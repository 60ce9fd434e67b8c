import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { killChild } from './child-process.ts';
import { ExitedAtStart, startOnFreePort } from './free-port.ts';
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
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--maxmemory-policy', 'noeviction', '--repl-diskless-sync-delay', '0'];
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
      let exited: number | string | null | undefined;
      started.once('exit', (code, signal) => {
        exited = code ?? signal;
      });
      // Generous: on a busy machine a start, or an AOF replay, can take seconds.
      const deadline = Date.now() + START_TIMEOUT_MS;
      while (Date.now() < deadline) {
        if (exited !== undefined) throw new ExitedAtStart(`redis-server on ${port} exited (${exited}) before it answered`);
        const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        probe.on('error', () => undefined);
        let servedFrom: string | undefined;
        try {
          await probe.connect();
          // With AOF, the server answers LOADING until the file is replayed.
          if ((await probe.ping()) === 'PONG') servedFrom = ((await probe.config('GET', 'dir')) as string[])[1];
        } catch {
          // Not listening, or loading, yet.
        } finally {
          probe.disconnect();
        }
        if (servedFrom === dir) return;
        if (servedFrom !== undefined) {
          // Another test's server took the port after this one exited on it.
          await killChild(started, 'SIGKILL');
          throw new ExitedAtStart(`port ${port} is served by another redis-server (dir ${servedFrom}), not the one started in ${dir}`);
        }
        await sleep(50);
      }
      await killChild(started, 'SIGKILL');
      throw new Error(`redis-server on ${port} did not answer PING within ${START_TIMEOUT_MS} ms`);
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
