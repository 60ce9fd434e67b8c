import { startFaultProxy, startRedisServer, type FaultProxy, type RedisServer } from '@flashsale/harness';
import { createRedis, type ScriptedRedis } from '@flashsale/redis-store';

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
    return {
      master,
      replica,
      url,
      redis: clients[0]!,
      onReplica: clients[1]!,
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
