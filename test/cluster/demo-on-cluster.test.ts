import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { runScript } from '../support/run-process.ts';
import { startRedisCluster, startRedisServer, type RedisCluster } from '@flashsale/harness';

// What a user runs, on a real 3-master Redis Cluster: `npm run services` and `npm run demo` as child
// processes, told REDIS_CLUSTER_NODES, with REDIS_URL pointing at a closed port (a script or a process
// that used it instead of the cluster would fail, not pass).

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
});
afterAll(async () => {
  await cluster?.stop();
});

const onCluster = () => ({ REDIS_CLUSTER_NODES: cluster.seeds, REDIS_URL: 'redis://127.0.0.1:1' });

/** Keys under `prefix` on each node of the cluster. */
async function keysOnNodes(prefix: string): Promise<number[]> {
  return Promise.all(
    cluster.nodes.map(async (node) => {
      const redis = new Redis(node.url);
      try {
        return (await redis.keys(`${prefix}:*`)).length;
      } finally {
        redis.disconnect();
      }
    }),
  );
}

describe('npm run services with REDIS_CLUSTER_NODES', () => {
  it('checks the cluster (every master it announces answers) and ignores REDIS_URL', async () => {
    const run = await runScript('infra/ensure-services.ts', onCluster());

    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(
      /^Redis Cluster of 3 masters \(127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+\) and MariaDB at .* answer\n$/,
    );
    expect(run.code).toBe(0);
  });

  it('says in one line that no seed node answers', async () => {
    const run = await runScript('infra/ensure-services.ts', { REDIS_CLUSTER_NODES: '127.0.0.1:1,127.0.0.1:2' });

    expect(run.stderr).toMatch(
      /^Redis Cluster: no seed node in REDIS_CLUSTER_NODES answers \(127\.0\.0\.1:1 does not answer: connect ECONNREFUSED .*\): start it/,
    );
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.code).toBe(1);
  });

  it('says so when the nodes named are not a cluster, or a cluster that serves no slot', async () => {
    const plain = await startRedisServer();
    const lone = await startRedisServer({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', '{dir}/nodes.conf'] });
    try {
      const notCluster = await runScript('infra/ensure-services.ts', { REDIS_CLUSTER_NODES: `127.0.0.1:${plain.port}` });
      expect(notCluster.stderr).toContain(
        `REDIS_CLUSTER_NODES names 127.0.0.1:${plain.port}, a Redis that is not a cluster node (cluster support disabled)`,
      );
      expect(notCluster.code).toBe(1);

      const uncreated = await runScript('infra/ensure-services.ts', { REDIS_CLUSTER_NODES: `127.0.0.1:${lone.port}` });
      expect(uncreated.stderr).toContain(
        `Redis Cluster at 127.0.0.1:${lone.port} does not serve: cluster_state:fail, 0 of 16384 slots served`,
      );
      expect(uncreated.stderr).toContain('the cluster was never created');
      expect(uncreated.code).toBe(1);
    } finally {
      await Promise.all([plain.stop(), lone.stop()]);
    }
  });
});

describe('npm run demo with REDIS_CLUSTER_NODES', () => {
  it('runs the whole demo on the cluster, every invariant holding, and leaves no key on any master', async () => {
    const run = await runScript('scripts/demo.ts', onCluster());

    expect(run.stdout).toContain('Redis Cluster of 3 masters');
    expect(run.stdout).toMatch(/units \+ remaining \(= stock\?\)\s*│ '1000 \/ 1000'/);
    expect(run.stdout).toMatch(/lost \(202 without order\)\s*│ 0 /);
    expect(run.stdout).toMatch(/unexpected \(order without 202\)\s*│ 0 /);
    expect(run.stdout).toContain('"consistent":true');
    expect(run.stdout).toContain('All invariants hold');
    // The provider's events are sent again after a 429 (the per-address budget) or a 503: every one is paid.
    expect(run.stdout).toMatch(/payment events sent: (\d+), answered \1 paid \(HTTP 200\)\n/);
    expect(run.stdout).toMatch(/re-sale payment events sent: (\d+), answered \1 paid \(HTTP 200\)\n/);
    expect(run.stdout).toContain('The sale balances');
    expect(run.stdout).toContain('exit codes: 0, 0, 0, 0');
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(await keysOnNodes('demo')).toEqual([0, 0, 0]);
  });
});
