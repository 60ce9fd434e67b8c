import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { askRedis, startRedisServer, type RedisServer } from './redis-server.ts';

/** One node of a test cluster: the redis-server, and its role as the cluster last reported it. */
export interface ClusterNode extends RedisServer {
  host: string;
}

/**
 * A real Redis Cluster on loopback, of a test's own: `masters` masters covering the 16384 slots, each
 * with `replicasPerMaster` replicas, on free ports, started in about two seconds and torn down by stop().
 */
export interface RedisCluster {
  nodes: ClusterNode[];
  /** `host:port,host:port,...` of every node: what REDIS_CLUSTER_NODES takes. */
  seeds: string;
  /** The node that serves `key`'s slot as master now. */
  masterOf(key: string): Promise<ClusterNode>;
  /** The masters, by the cluster's current view. */
  masters(): Promise<ClusterNode[]>;
  /** The replicas of `master`, by their own view (ROLE). */
  replicasOf(master: ClusterNode): Promise<ClusterNode[]>;
  /** Promotes `replica` to master of its master's slots (CLUSTER FAILOVER FORCE), waiting until it is. */
  failover(replica: ClusterNode): Promise<void>;
  /** Waits until every node reports cluster_state:ok and agrees on the masters. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const NODE_ARGS = ['--cluster-enabled', 'yes', '--cluster-config-file', '{dir}/nodes.conf', '--cluster-node-timeout', '1000'];

export async function startRedisCluster({ masters = 3, replicasPerMaster = 0 } = {}): Promise<RedisCluster> {
  const nodes: ClusterNode[] = [];
  try {
    for (let i = 0; i < masters * (1 + replicasPerMaster); i++) {
      nodes.push(Object.assign(await startRedisServer({ args: NODE_ARGS }), { host: '127.0.0.1' }));
    }
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `${n.host}:${n.port}`), '--cluster-replicas', String(replicasPerMaster), '--cluster-yes'],
      { encoding: 'utf8' },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }

  const ask = <T>(node: ClusterNode, command: (redis: Redis) => Promise<T>) => askRedis(node.url, command);
  const byPort = (port: number) => nodes.find((n) => n.port === port)!;
  /** The masters' ports from CLUSTER SLOTS on a node: [start, end, [host, port, id, info], ...replicas]. */
  const masterPorts = async (node: ClusterNode) =>
    new Set((await ask(node, (r) => r.cluster('SLOTS'))).map((range) => Number(range[2]?.[1])));

  const cluster: RedisCluster = {
    nodes,
    seeds: nodes.map((n) => `${n.host}:${n.port}`).join(','),
    async masterOf(key) {
      const slot = await ask(nodes[0]!, (r) => r.cluster('KEYSLOT', key));
      const ranges = await ask(nodes[0]!, (r) => r.cluster('SLOTS'));
      const master = ranges.find(([start, end]) => slot >= start && slot <= end)?.[2];
      if (!master) throw new Error(`no master serves slot ${slot}`);
      return byPort(master[1]);
    },
    async masters() {
      return [...(await masterPorts(nodes[0]!))].map(byPort);
    },
    async replicasOf(master) {
      const replicas = [];
      for (const node of nodes) {
        if (node === master) continue;
        const role = (await ask(node, (r) => r.role())) as [string, string?, number?];
        if (role[0] === 'slave' && Number(role[2]) === master.port) replicas.push(node);
      }
      return replicas;
    },
    async failover(replica) {
      await ask(replica, (r) => r.cluster('FAILOVER', 'FORCE'));
      for (let attempt = 0; attempt < 200; attempt++) {
        const role = (await ask(replica, (r) => r.role())) as [string, ...unknown[]];
        if (role[0] === 'master') return cluster.waitUntilHealthy();
        await sleep(25);
      }
      throw new Error(`node ${replica.port} did not become master`);
    },
    async waitUntilHealthy(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const views = await Promise.all(
          nodes.map(async (n) => {
            try {
              const info = await ask(n, (r) => r.cluster('INFO'));
              // A replica counts once it is in sync with its master (it could not take over otherwise).
              const replication = await ask(n, (r) => r.info('replication'));
              if (/role:slave/.test(replication) && !/master_link_status:up/.test(replication)) return null;
              return /cluster_state:ok/.test(String(info)) ? [...(await masterPorts(n))].sort().join(',') : null;
            } catch {
              return null;
            }
          }),
        );
        if (views.every((view) => view !== null && view === views[0]) && views[0]!.split(',').length === masters) return;
        if (Date.now() > deadline) throw new Error(`cluster not healthy within ${timeoutMs} ms: ${JSON.stringify(views)}`);
        await sleep(50);
      }
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
  await cluster.waitUntilHealthy();
  return cluster;
}
