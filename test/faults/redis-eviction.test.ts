import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { redisEnvOf, spawnApp, spawnReconciler, startRedisServer, type AppProcess, type RedisServer } from '@flashsale/harness';
import { createTestContext } from '../support/context.ts';
import { metricsPortOf } from '../support/metrics-text.ts';
import { until } from '../support/until.ts';

// Eviction is named: every process refuses to run on a Redis that may evict keys (BullMQ requires
// noeviction, and an evicted sale meta or buyers hash is a silent loss), warns when it cannot tell
// (CONFIG disabled, as on managed Redis), and the reconciler exports Redis's memory and evictions.

const servers: RedisServer[] = [];
const processes: AppProcess[] = [];
afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.kill('SIGKILL')));
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

const ctx = createTestContext();
const envOf = (server: RedisServer) => ({
  ...redisEnvOf({ url: server.url }),
  DATABASE_URL: ctx.config.DATABASE_URL,
  REDIS_PREFIX: ctx.config.REDIS_PREFIX,
  PORT: '0',
  METRICS_PORT: '0',
  WORKER_PORT: '0',
  RECONCILER_PORT: '0',
});
const FATAL =
  "Redis may evict keys (maxmemory-policy is not noeviction): a sale's stock, buyers or stream could vanish silently. Set `maxmemory-policy noeviction` (infra/redis.conf) and start again";

describe('maxmemory-policy', () => {
  it('allkeys-lru: the gateway, the worker and the reconciler each refuse to run (exit 1, one fatal line naming the policy)', async () => {
    const server = await startRedisServer({ args: ['--maxmemory-policy', 'allkeys-lru'] });
    servers.push(server);
    const apps = (['gateway', 'worker', 'reconciler'] as const).map((app) => spawnApp(app, envOf(server)));
    processes.push(...apps);

    expect(
      await Promise.all(
        apps.map((app) => Promise.race([app.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 30_000))])),
      ),
    ).toEqual([1, 1, 1]);
    for (const app of apps) expect(app.logs.find((l) => l.level === 60)).toMatchObject({ maxmemoryPolicy: 'allkeys-lru', msg: FATAL });
  });

  it('CONFIG disabled (managed Redis): a loud warning, and the process runs', async () => {
    const server = await startRedisServer({ args: ['--rename-command', 'CONFIG', '""'] });
    servers.push(server);
    const reconciler = await spawnReconciler(envOf(server));
    processes.push(reconciler);

    const warning = await reconciler.waitForLog({
      matches: (l) => typeof l.msg === 'string' && l.msg.startsWith('cannot read Redis maxmemory-policy'),
      what: 'the "cannot read Redis maxmemory-policy" warning',
    });
    expect(warning).toMatchObject({ level: 40 });
    expect(reconciler.child.exitCode).toBeNull();
  });

  it('the reconciler exports used_memory, maxmemory and evictions, counting the evictions of a policy changed after its start', async () => {
    const server = await startRedisServer();
    servers.push(server);
    const reconciler = await spawnReconciler(envOf(server));
    processes.push(reconciler);
    const scrape = async () => (await (await fetch(`http://127.0.0.1:${metricsPortOf(reconciler)}/metrics`)).text()).split('\n');
    const node = `127.0.0.1:${server.port}`;
    const first = await scrape();
    expect(first).toContain(`flashsale_redis_evicted_keys_total{node="${node}"} 0`);

    // Someone sets an evicting policy on the running Redis and fills it, once the reconciler's start-up
    // check has read the policy (CONFIG GET, seen in this server's own command counts, `cmdstat_config|get`): set before, the
    // check would rightly stop the process, and on a busy machine it runs some time after "started".
    const admin = new Redis(server.url);
    try {
      await until(
        () => admin.info('commandstats'),
        (stats) => /^cmdstat_config\|get:calls=[1-9]/m.test(stats),
        60_000,
      );
      await admin.config('SET', 'maxmemory', '4mb');
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      for (let i = 0; i < 100; i++) await admin.set(`filler:${i}`, 'x'.repeat(100_000));
    } finally {
      admin.disconnect();
    }

    const lines = await until(
      scrape,
      (l) => l.some((line) => /^flashsale_redis_evicted_keys_total\{node="[^"]+"\} [1-9]/.test(line)),
      10_000,
    );
    expect(lines).toContain(`flashsale_redis_maxmemory_bytes{node="${node}"} 4194304`);
    expect(
      lines.some((line) => new RegExp(`^flashsale_redis_used_memory_bytes\\{node="${node.replace('.', '\\.')}"\\} \\d+`).test(line)),
    ).toBe(true);
  });
});
