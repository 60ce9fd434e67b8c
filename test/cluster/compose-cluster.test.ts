import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { Redis } from 'ioredis';
import { loadConfig } from '@flashsale/config';
import { createRedis } from '@flashsale/redis-store';
import { freePort, spawnInGroup } from '@flashsale/harness';
import { runProcess, runScript } from '../support/run-process.ts';

// The compose files' `cluster` profile, as far as it can be run without a Docker engine: its structure
// (read with the yaml package; `docker-compose config` checks the files in compose-config.test.ts), and its node
// configuration (infra/redis-cluster.conf) and one-shot job (infra/redis-cluster-init.sh) for real, on six
// redis-servers bound to loopback addresses of their own, as six containers would be on their network.

interface Service {
  profiles?: string[];
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
}
type ComposeFile = { services: Record<string, Service>; 'x-app-env'?: Record<string, string> };
const readCompose = (path: string) => parse(readFileSync(path, 'utf8'), { merge: true }) as ComposeFile;
// The stores (docker-compose.yml) and the processes over them (docker-compose.app.yml), as compose merges them.
const stores = readCompose('infra/docker-compose.yml');
const app = readCompose('infra/docker-compose.app.yml');
const compose = { services: { ...stores.services, ...app.services }, 'x-app-env': app['x-app-env']! };

describe('the compose file: the Redis Cluster profile', () => {
  it('creates the cluster from the very nodes it runs, each announcing its own service name, and every process takes REDIS_CLUSTER_NODES', () => {
    const init = compose.services['redis-cluster-init']!;
    const nodes = init.environment!.REDIS_CLUSTER_CREATE_NODES!.split(' ');
    const nodeServices = Object.keys(compose.services).filter((name) => name.startsWith('redis-node-'));

    expect(nodes).toEqual(nodeServices);
    expect(nodes).toHaveLength(6);
    expect(init.environment!.REDIS_CLUSTER_REPLICAS).toBe('1');
    expect(init.profiles).toEqual(['cluster']);
    expect(init.entrypoint).toEqual(['sh', '/usr/local/bin/redis-cluster-init.sh']);
    expect(init.volumes).toContain('./redis-cluster-init.sh:/usr/local/bin/redis-cluster-init.sh:ro');
    expect(init.depends_on).toEqual(Object.fromEntries(nodes.map((node) => [node, { condition: 'service_healthy' }])));
    for (const node of nodes) {
      const service = compose.services[node]!;
      expect(service.profiles).toEqual(['cluster']);
      expect(service.command).toEqual(['redis-server', '/usr/local/etc/redis/redis-cluster.conf', '--cluster-announce-hostname', node]);
      expect(service.volumes).toEqual([
        './redis.conf:/usr/local/etc/redis/redis.conf:ro',
        './redis-cluster.conf:/usr/local/etc/redis/redis-cluster.conf:ro',
        `${node}-data:/data`,
      ]);
    }

    expect(compose['x-app-env'].REDIS_CLUSTER_NODES).toBe('${REDIS_CLUSTER_NODES:-}');
    for (const app of ['migrate', 'gateway', 'worker', 'reconciler'])
      expect(compose.services[app]!.environment!.REDIS_CLUSTER_NODES).toBe('${REDIS_CLUSTER_NODES:-}');
    // What the comments tell an operator to set, and what the variable is when it is not set.
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'redis-node-1:6379,redis-node-2:6379,redis-node-3:6379' }).REDIS_CLUSTER_NODES).toEqual(
      [1, 2, 3].map((n) => ({ host: `redis-node-${n}`, port: 6379 })),
    );
    expect(loadConfig({ REDIS_CLUSTER_NODES: '' }).REDIS_CLUSTER_NODES).toBeUndefined();
  });
});

const work = mkdtempSync(join(tmpdir(), 'flashsale-compose-cluster-'));
const running: ChildProcess[] = [];
afterAll(async () => {
  await Promise.all(running.map((child) => stopNode(child)));
  rmSync(work, { recursive: true, force: true });
});

async function stopNode(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/**
 * The six nodes, started as the compose file starts them (infra/redis-cluster.conf, which includes
 * infra/redis.conf, and the announced name) on `addresses`, all on `port`, each in its own directory
 * (their volumes). Here a node's name is its address, and it announces that address too: on one machine
 * every loopback connection would otherwise come from 127.0.0.1, which containers do not share.
 */
async function startNodes(addresses: string[], port: number): Promise<ChildProcess[]> {
  const conf = join(work, 'redis-cluster.conf');
  writeFileSync(
    conf,
    readFileSync('infra/redis-cluster.conf', 'utf8').replace(
      'include /usr/local/etc/redis/redis.conf',
      `include ${join(process.cwd(), 'infra/redis.conf')}`,
    ),
  );
  const nodes = addresses.map((address, i) => {
    const dir = join(work, `node-${i + 1}`);
    mkdirSync(dir, { recursive: true });
    const child = spawnInGroup(
      'redis-server',
      [
        conf,
        '--bind',
        address,
        '--port',
        String(port),
        '--dir',
        dir,
        '--cluster-announce-hostname',
        address,
        '--cluster-announce-ip',
        address,
      ],
      {
        cwd: dir,
        stdio: 'ignore',
      },
    );
    running.push(child);
    return child;
  });
  for (const address of addresses) {
    for (let attempt = 0; ; attempt++) {
      const probe = new Redis({ host: address, port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      const answered = await probe
        .connect()
        .then(() => probe.ping())
        .catch(() => null)
        .finally(() => probe.disconnect());
      if (answered === 'PONG') break;
      if (attempt > 100) throw new Error(`redis-server on ${address}:${port} did not come up`);
      await sleep(50);
    }
  }
  return nodes;
}

describe('the compose file: its cluster nodes and the one-shot job, run', () => {
  it('creates the cluster, whose slots are announced by name; finds it again when run again, and after every node came back on another address', async () => {
    // Loopback addresses of this test's own (any 127.x.y.z is this machine), one port for all, as in Docker.
    const block = () => `127.${randomInt(64, 250)}.${randomInt(1, 250)}`;
    const [first, second] = [block(), block()];
    // A cluster node's bus port is its port + 10,000: redis-server refuses a port above 55535 and exits.
    let port = await freePort();
    while (port > 55_535) port = await freePort();
    const addresses = [1, 2, 3, 4, 5, 6].map((n) => `${first}.${n}`);
    const init = (nodes: string[]) =>
      runProcess('sh', ['infra/redis-cluster-init.sh'], {
        REDIS_CLUSTER_CREATE_NODES: nodes.join(' '),
        REDIS_CLUSTER_REPLICAS: '1',
        REDIS_PORT: String(port),
      });
    const services = (nodes: string[]) =>
      runScript('infra/ensure-services.ts', {
        REDIS_CLUSTER_NODES: nodes
          .slice(0, 3)
          .map((a) => `${a}:${port}`)
          .join(','),
      });

    let nodes = await startNodes(addresses, port);
    const created = await init(addresses);
    expect(created.code, created.stdout + created.stderr).toBe(0);
    expect(created.stdout).toContain('redis-cluster-init: creating the cluster of');
    expect(created.stdout).toContain('[OK] All 16384 slots covered.');
    expect(created.stdout).toContain('redis-cluster-init: cluster_state:ok on every node');

    // Clients are given the announced name (the metadata then carries the address: endpoint type hostname).
    const probe = new Redis({ host: addresses[0], port });
    const slots = await probe.cluster('SLOTS');
    probe.disconnect();
    expect(slots).toHaveLength(3);
    for (const [, , master] of slots) expect(master?.[3]).toEqual(['ip', master?.[0]]);
    // The nodes keep redis.conf's durability settings.
    const config = new Redis({ host: addresses[0], port });
    expect(await config.config('GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
    config.disconnect();

    const checked = await services(addresses);
    expect(checked.stdout).toMatch(/^Redis Cluster of 3 masters/);
    expect(checked.code).toBe(0);
    // The system's client reaches every master by the names announced.
    const cluster = createRedis({ clusterNodes: [{ host: addresses[0]!, port }] });
    for (let sale = 1; sale <= 12; sale++) await cluster.set(`compose-test:{s${sale}}:meta`, String(sale));
    expect(await cluster.get('compose-test:{s7}:meta')).toBe('7');
    await cluster.quit();

    const again = await init(addresses);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain('redis-cluster-init: the cluster exists (16384 slots assigned)');

    // Every container recreated on another address: the same volumes, new addresses.
    await Promise.all(nodes.map((node) => stopNode(node)));
    const moved = [1, 2, 3, 4, 5, 6].map((n) => `${second}.${n}`);
    nodes = await startNodes(moved, port);
    const refound = await init(moved);
    expect(refound.code, refound.stdout + refound.stderr).toBe(0);
    expect(refound.stdout).toContain(
      'redis-cluster-init: the cluster exists (16384 slots assigned); introducing the nodes at their current addresses',
    );
    const after = await services(moved);
    expect(after.stdout).toMatch(new RegExp(`^Redis Cluster of 3 masters \\(${second.replaceAll('.', '\\.')}\\.`));
    expect(after.code).toBe(0);
    // The keys written before, kept in the nodes' AOF, are there.
    const reopened = createRedis({ clusterNodes: [{ host: moved[0]!, port }] });
    expect(await reopened.get('compose-test:{s7}:meta')).toBe('7');
    await reopened.quit();
  });
});
