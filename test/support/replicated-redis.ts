import { startFaultProxy, startRedisServer, type FaultProxy, type RedisServer } from '@flashsale/harness';
import { createRedis, type ScriptedRedis } from '@flashsale/redis-store';
import { until } from './until.ts';

/**
 * A Redis master and its replica (real redis-servers) reached through one address, a proxy standing for
 * the address a Sentinel-aware proxy or a virtual IP would move in a failover.
 */
export interface ReplicatedRedis {
  master: RedisServer;
  replica: RedisServer;
  /** REDIS_URL of the system: the moving address. */
  url: string;
  /** A test's own connection through the moving address. */
  redis: ScriptedRedis;
  /** A test's own connection to the replica itself. */
  onReplica: ScriptedRedis;
  /**
   * Resolves once the replica has applied every write the master had made when called (its link up, its
   * offset at the master's then). A replica answers, empty, before it holds anything: its first sync
   * takes a moment (and 5 s more with Redis's default `repl-diskless-sync-delay`, which the harness sets
   * to 0), so a test that detaches or promotes the replica sooner gets one that never held the sale.
   */
  caughtUp(): Promise<void>;
  /** The failover: the address moves to the replica, and the old master dies. */
  failover(): Promise<void>;
  stop(): Promise<void>;
}

export async function startReplicatedRedis(): Promise<ReplicatedRedis> {
  const servers: RedisServer[] = [];
  let proxy: FaultProxy | undefined;
  const clients: ScriptedRedis[] = [];
  const stop = async () => {
    for (const client of clients) client.disconnect();
    await proxy?.close();
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    const master = await startRedisServer();
    servers.push(master);
    const replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
    servers.push(replica);
    proxy = await startFaultProxy(master.port);
    const moving = proxy;
    const url = `redis://127.0.0.1:${moving.port}`;
    clients.push(createRedis(url), createRedis(replica.url));
    const [redis, onReplica] = clients as [ScriptedRedis, ScriptedRedis];
    return {
      master,
      replica,
      url,
      redis,
      onReplica,
      async caughtUp() {
        const onMaster = createRedis(master.url);
        const written = await onMaster.info('replication').finally(() => onMaster.disconnect());
        await until(
          () => onReplica.info('replication'),
          (info) =>
            /^master_link_status:up\r?$/m.test(info) && offsetOf(info, 'slave_repl_offset') >= offsetOf(written, 'master_repl_offset'),
        );
      },
      async failover() {
        moving.retarget(replica.port);
        await master.kill('SIGKILL');
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A numeric field of INFO replication (-1 when absent: a replica before its first sync has no offset). */
function offsetOf(info: string, field: string): number {
  return Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(info)?.[1] ?? -1);
}
