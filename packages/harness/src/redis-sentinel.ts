import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { killChild } from './child-process.ts';
import { spawnInGroup } from './process-group.ts';
import { startOnFreePort, waitUntilServing } from './server-start.ts';
import { askRedis, servedBy, startRedisServer, type RedisServer, type RedisServerOptions } from './redis-server.ts';

/** One redis-sentinel of a test's own. */
export interface SentinelProcess {
  port: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * A primary, its replicas and the sentinels that watch them, on loopback, of a test's own: Redis
 * Sentinel as a deployment runs it, with the timings shortened (down after `downAfterMs`).
 */
export interface RedisSentinels {
  masterName: string;
  /** Every redis-server: the first started as the primary, the others as its replicas. */
  servers: RedisServer[];
  sentinels: SentinelProcess[];
  /** `host:port,host:port,...` of the sentinels: what REDIS_SENTINELS takes. */
  seeds: string;
  /** The server the sentinels name as the primary now (the first sentinel that answers). */
  primary(): Promise<RedisServer>;
  /** Waits until the sentinels name a primary other than `old`, and it answers as a primary. */
  waitForFailover(old: RedisServer, timeoutMs?: number): Promise<RedisServer>;
  /**
   * Tells every sentinel to count the primary down only after `downAfterMs` (SENTINEL SET
   * down-after-milliseconds), or, with no argument, after the setup's own time again once every sentinel
   * has no ping to the primary left unanswered (so the one it sent while the primary was held does not
   * count it down the moment the shorter time is back). A sentinel's PING waits behind its own PUBLISH of
   * hello messages, which CLIENT PAUSE WRITE holds: a test that holds a primary's writes longer than the
   * setup's time would get a failover it did not ask for.
   */
  setDownAfter(downAfterMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisSentinelOptions {
  replicas?: number;
  sentinels?: number;
  masterName?: string;
  /** How long a primary may not answer before the sentinels count it down, default 2000 ms. */
  downAfterMs?: number;
  appendfsync?: RedisServerOptions['appendfsync'];
}

const START_TIMEOUT_MS = 60_000;

const ask = <T>(port: number, command: (redis: Redis) => Promise<T>) => askRedis(`redis://127.0.0.1:${port}`, command);

function startSentinel(masterName: string, primaryPort: number, quorum: number, downAfterMs: number): Promise<SentinelProcess> {
  return startOnFreePort((port) => sentinelOnPort(port, masterName, primaryPort, quorum, downAfterMs));
}

function sentinelOnPort(port: number, masterName: string, primaryPort: number, quorum: number, downAfterMs: number) {
  const dir = mkdtempSync(join(tmpdir(), 'flashsale-sentinel-'));
  const config = join(dir, 'sentinel.conf');
  // The sentinel rewrites its file as it learns the replicas, the other sentinels and a new primary.
  writeFileSync(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${masterName} 127.0.0.1 ${primaryPort} ${quorum}`,
      `sentinel down-after-milliseconds ${masterName} ${downAfterMs}`,
      `sentinel failover-timeout ${masterName} ${downAfterMs * 3}`,
      `sentinel parallel-syncs ${masterName} 1`,
      '',
    ].join('\n'),
  );
  let child: ChildProcess | undefined;
  const sentinel = {
    port,
    /** Returns once the sentinel answers as itself; fails at once if it exits first (its port taken meanwhile). */
    async start() {
      // redis-server runs as a sentinel with --sentinel: Debian's redis-sentinel package is the same
      // program under another name, and a machine with redis-server need not have it.
      const started = spawnInGroup('redis-server', [config, '--sentinel'], { stdio: 'ignore' });
      child = started;
      await waitUntilServing(started, `redis-sentinel on ${port}`, START_TIMEOUT_MS, () =>
        servedBy(`redis://127.0.0.1:${port}`, started.pid),
      );
    },
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      await killChild(child, signal);
      rmSync(dir, { recursive: true, force: true });
    },
    stop: () => sentinel.kill('SIGKILL'),
  };
  return sentinel;
}

/**
 * Starts 1 primary + `replicas` replicas (appendfsync as asked) and `sentinels` sentinels (quorum: a
 * majority of them), and waits until every sentinel knows every replica and every other sentinel, so a
 * failover can be agreed as soon as the primary goes.
 */
export async function startRedisSentinels({
  replicas = 2,
  sentinels = 3,
  masterName = 'mymaster',
  downAfterMs = 2000,
  appendfsync,
}: RedisSentinelOptions = {}): Promise<RedisSentinels> {
  const servers: RedisServer[] = [];
  const watchers: SentinelProcess[] = [];
  const stop = async () => {
    await Promise.all(watchers.map((s) => s.kill()));
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    const persistence = appendfsync ? { appendfsync } : {};
    servers.push(await startRedisServer(persistence));
    const primaryPort = servers[0]!.port;
    for (let i = 0; i < replicas; i++)
      servers.push(await startRedisServer({ ...persistence, args: ['--replicaof', '127.0.0.1', String(primaryPort)] }));
    for (let i = 0; i < sentinels; i++)
      watchers.push(await startSentinel(masterName, primaryPort, Math.floor(sentinels / 2) + 1, downAfterMs));
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const ready = await Promise.all(
        watchers.map(async ({ port }) => {
          try {
            const [known, peers] = await ask(port, async (r) => [
              (await r.call('SENTINEL', 'replicas', masterName)) as unknown[],
              (await r.call('SENTINEL', 'sentinels', masterName)) as unknown[],
            ]);
            return known.length === replicas && peers.length === sentinels - 1;
          } catch {
            return false;
          }
        }),
      );
      if (ready.every(Boolean)) break;
      if (Date.now() > deadline)
        throw new Error(`the sentinels did not all learn of ${replicas} replicas and ${sentinels - 1} peers within ${START_TIMEOUT_MS} ms`);
      await sleep(100);
    }
  } catch (error) {
    await stop();
    throw error;
  }

  const byPort = (port: number) => {
    const server = servers.find((s) => s.port === port);
    if (!server) throw new Error(`the sentinels name 127.0.0.1:${port}, which is none of this setup's servers`);
    return server;
  };
  const named = async (): Promise<number> => {
    for (const { port } of watchers) {
      try {
        const address = (await ask(port, (r) => r.call('SENTINEL', 'get-master-addr-by-name', masterName))) as [string, string] | null;
        if (address) return Number(address[1]);
      } catch {
        // This sentinel is away: ask the next.
      }
    }
    throw new Error('no sentinel answers');
  };

  /** Whether the sentinel on `port` has sent the primary a ping it has not answered yet. */
  const pingPending = async (port: number) => {
    const fields = (await ask(port, (r) => r.call('SENTINEL', 'master', masterName))) as string[];
    return Number(fields[fields.indexOf('last-ping-sent') + 1]) > 0;
  };
  const setDownAfter = async (wanted?: number) => {
    const deadline = Date.now() + START_TIMEOUT_MS;
    if (wanted === undefined) {
      for (const { port } of watchers) {
        while (await pingPending(port)) {
          if (Date.now() > deadline) throw new Error(`sentinel ${port} has a ping to ${masterName} unanswered for ${START_TIMEOUT_MS} ms`);
          await sleep(20);
        }
      }
    }
    for (const { port } of watchers) {
      await ask(port, (r) => r.call('SENTINEL', 'SET', masterName, 'down-after-milliseconds', String(wanted ?? downAfterMs)));
    }
  };

  return {
    masterName,
    servers,
    sentinels: watchers,
    seeds: watchers.map(({ port }) => `127.0.0.1:${port}`).join(','),
    primary: async () => byPort(await named()),
    async waitForFailover(old, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const port = await named().catch(() => old.port);
        if (port !== old.port) {
          const role = await ask(port, (r) => r.role()).catch(() => null);
          if (role?.[0] === 'master') return byPort(port);
        }
        if (Date.now() > deadline)
          throw new Error(`the sentinels did not fail ${masterName} over from 127.0.0.1:${old.port} within ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    setDownAfter,
    stop,
  };
}
