import { spawnSync } from 'node:child_process';
import { createConnection } from 'mariadb';
import { Redis } from 'ioredis';
import { ConfigError, loadConfig, parseCommandLine } from '@flashsale/config';
import { poolConfigFromUrl } from '@flashsale/order-store';

/**
 * Makes sure Redis and MariaDB answer at REDIS_URL and DATABASE_URL. A service that does not answer at
 * a local address is started from the machine's own packages (Debian's redis-server, without
 * persistence, on the configured port; mariadbd, which listens where its own configuration says, so only
 * when 3306 is configured); anything else gets one line saying what to do. Used by `npm test`, `npm run
 * demo` and CI.
 *
 * With REDIS_CLUSTER_NODES set (not empty), the processes use that Redis Cluster and REDIS_URL is ignored:
 * so here. Nothing is started then; the seed nodes are asked, and the check fails with one line saying what
 * is wrong when none answers, when they are not cluster nodes, when the cluster does not serve every slot,
 * or when a master it announces does not answer from this machine (what every client will be sent to).
 * With REDIS_SENTINELS set, the sentinels are asked where the primary named REDIS_SENTINEL_MASTER is, and
 * that primary must answer; nothing is started either.
 */

const LOCAL = new Set(['127.0.0.1', 'localhost', '::1']);

const startRedis = (port: number) =>
  [
    'redis-server',
    [
      '--daemonize',
      'yes',
      '--bind',
      '127.0.0.1',
      '-::1',
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      '/var/lib/redis',
      '--logfile',
      `/var/log/redis/flashsale-${port}.log`,
    ],
  ] as const;
const START_MARIADB = ['start-stop-daemon', ['--start', '--oknodo', '--background', '--exec', '/usr/sbin/mariadbd']] as const;

/** What to do about a service that cannot be reached, in one line. */
class ServiceUnreachable extends Error {
  override readonly name = 'ServiceUnreachable';
}

async function redisAnswers(url: string): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

async function mariadbAnswers(databaseUrl: string): Promise<boolean> {
  const { database: _database, ...server } = poolConfigFromUrl(databaseUrl);
  try {
    const connection = await createConnection({ ...server, connectTimeout: 1000 });
    await connection.end();
    return true;
  } catch {
    return false;
  }
}

async function ensure(
  name: string,
  url: URL,
  answers: () => Promise<boolean>,
  start: readonly [string, readonly string[]] | null,
  variable: string,
): Promise<void> {
  if (await answers()) return;
  const where = `${url.hostname}:${url.port || (url.protocol.startsWith('redis') ? 6379 : 3306)}`;
  const todo = `start it (e.g. docker compose -f infra/docker-compose.yml up -d ${name === 'Redis' ? 'redis' : 'mariadb'}) or set ${variable} to where it runs`;
  if (!LOCAL.has(url.hostname) || !start) throw new ServiceUnreachable(`${name} does not answer at ${where}: ${todo}`);
  console.log(`${name} does not answer at ${where}; starting the local server: ${start[0]} ${start[1].join(' ')}`);
  const result = spawnSync(start[0], [...start[1]], { stdio: 'inherit' });
  if (result.error || result.status !== 0)
    throw new ServiceUnreachable(`${name} does not answer at ${where} and ${start[0]} could not start it: ${todo}`);
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await answers()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new ServiceUnreachable(`${name} did not answer at ${where} within 20 s of starting it: ${todo}`);
}

type ClusterNode = { host: string; port: number };
const at = ({ host, port }: ClusterNode) => `${host}:${port}`;
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error)) || 'no answer';

/** One command on one node of a cluster, on a connection of its own: no retries, 1 s to connect, 2 s to answer. */
async function askNode<T>(node: ClusterNode, command: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    host: node.host,
    port: node.port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    commandTimeout: 2000,
  });
  // A refused or failed connect rejects with "Connection is closed."; the socket's own error says more.
  let socketError: Error | undefined;
  redis.on('error', (error: Error) => (socketError = error));
  try {
    await redis.connect();
    return await command(redis);
  } catch (error) {
    throw socketError && messageOf(error) === 'Connection is closed.' ? socketError : error;
  } finally {
    redis.disconnect();
  }
}

/** REDIS_CLUSTER_NODES parsed as every process parses it (the configuration's own rule). */
function clusterNodesOf(value: string): ClusterNode[] {
  try {
    return loadConfig({ REDIS_CLUSTER_NODES: value }).REDIS_CLUSTER_NODES ?? [];
  } catch (error) {
    if (error instanceof ConfigError)
      throw new ServiceUnreachable(`REDIS_CLUSTER_NODES=${value} is not valid: ${error.problems.join('; ')}`);
    throw error;
  }
}

/**
 * Checks the Redis Cluster REDIS_CLUSTER_NODES names, as its clients will find it: the first seed that
 * answers must be a cluster node whose cluster serves all 16384 slots, and every master the cluster
 * announces (CLUSTER SLOTS: the addresses a client is sent to) must answer PING from here. Returns what
 * answered, in words.
 */
async function ensureCluster(seeds: ClusterNode[]): Promise<string> {
  const fix =
    'start it (e.g. docker compose -f infra/docker-compose.yml --profile cluster up -d, which creates it) or correct REDIS_CLUSTER_NODES (unset or empty: one Redis at REDIS_URL)';
  const silent: string[] = [];
  for (const seed of seeds) {
    let info: string;
    try {
      info = String(await askNode(seed, (r) => r.cluster('INFO')));
    } catch (error) {
      if (/cluster support disabled/i.test(messageOf(error))) {
        throw new ServiceUnreachable(
          `REDIS_CLUSTER_NODES names ${at(seed)}, a Redis that is not a cluster node (cluster support disabled): name the nodes of a Redis Cluster, or unset REDIS_CLUSTER_NODES to use one Redis at REDIS_URL`,
        );
      }
      silent.push(`${at(seed)} does not answer: ${messageOf(error)}`);
      continue;
    }
    const field = (name: string) => new RegExp(`${name}:(\\S+)`).exec(info)?.[1] ?? '?';
    if (field('cluster_state') !== 'ok') {
      const why =
        field('cluster_slots_assigned') === '0'
          ? `no slot is assigned: the cluster was never created (redis-cli --cluster create ${seeds.map(at).join(' ')} --cluster-yes, or the compose file's cluster profile)`
          : 'a master is down (or cut off) and no replica has taken its slots over';
      throw new ServiceUnreachable(
        `Redis Cluster at ${at(seed)} does not serve: cluster_state:${field('cluster_state')}, ${field('cluster_slots_ok')} of 16384 slots served, ${field('cluster_known_nodes')} nodes known; ${why}`,
      );
    }
    const masters = new Map<string, string[]>();
    for (const [start, end, master] of await askNode(seed, (r) => r.cluster('SLOTS'))) {
      if (!master) continue;
      // No endpoint ('?' or empty: a node asked to announce a hostname it was not given): ioredis has
      // nowhere to send the slots' commands.
      if (!master[0] || master[0] === '?') {
        throw new ServiceUnreachable(
          `Redis Cluster: the master of slots ${start}-${end} (node ${master[2]}) announces no address clients can use (${JSON.stringify(master[0])}): with cluster-preferred-endpoint-type hostname, every node needs its cluster-announce-hostname`,
        );
      }
      const address = at({ host: master[0], port: master[1] });
      masters.set(address, [...(masters.get(address) ?? []), start === end ? `${start}` : `${start}-${end}`]);
    }
    for (const [address, slots] of masters) {
      const colon = address.lastIndexOf(':');
      const master = { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
      try {
        await askNode(master, (r) => r.ping());
      } catch (error) {
        throw new ServiceUnreachable(
          `Redis Cluster: master ${address} (slots ${slots.join(', ')}), as the cluster announces it, does not answer from here (${messageOf(error)}): every client is sent to that address, so it must be reachable from the processes (nodes in containers announce their service name: cluster-announce-hostname with cluster-preferred-endpoint-type hostname)`,
        );
      }
    }
    const unanswered = silent.map((line) => `; seed ${line}`).join('');
    return `Redis Cluster of ${masters.size} masters (${[...masters.keys()].join(', ')}${unanswered})`;
  }
  throw new ServiceUnreachable(`Redis Cluster: no seed node in REDIS_CLUSTER_NODES answers (${silent.join('; ')}): ${fix}`);
}

/** The primary the first answering sentinel names, which must answer as a primary. */
async function ensureSentinels(value: string, masterName: string): Promise<string> {
  let sentinels: { host: string; port: number }[];
  try {
    sentinels = loadConfig({ REDIS_SENTINELS: value }).REDIS_SENTINELS ?? [];
  } catch (error) {
    if (error instanceof ConfigError) throw new ServiceUnreachable(`REDIS_SENTINELS=${value} is not valid: ${error.problems.join('; ')}`);
    throw error;
  }
  const silent: string[] = [];
  for (const { host, port } of sentinels) {
    const sentinel = new Redis({ host, port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
    sentinel.on('error', () => undefined);
    try {
      await sentinel.connect();
      const address = (await sentinel.call('SENTINEL', 'get-master-addr-by-name', masterName)) as [string, string] | null;
      if (!address)
        throw new ServiceUnreachable(
          `Redis Sentinel at ${host}:${port} monitors no primary named ${masterName}: set REDIS_SENTINEL_MASTER to the name in its \`sentinel monitor\` line`,
        );
      const [primaryHost, primaryPort] = address;
      if (!(await redisAnswers(`redis://${primaryHost}:${primaryPort}`))) {
        throw new ServiceUnreachable(
          `Redis Sentinel names ${primaryHost}:${primaryPort} as the primary ${masterName}, and it does not answer from this machine`,
        );
      }
      return `Redis primary ${masterName} at ${primaryHost}:${primaryPort} (named by the sentinel at ${host}:${port})`;
    } catch (error) {
      if (error instanceof ServiceUnreachable) throw error;
      silent.push(`${host}:${port} ${(error as Error).message}`);
    } finally {
      sentinel.disconnect();
    }
  }
  throw new ServiceUnreachable(
    `Redis Sentinel: no sentinel in REDIS_SENTINELS answers (${silent.join('; ')}): start them or correct REDIS_SENTINELS`,
  );
}

/**
 * Makes sure the services answer (see above) and returns what answered, in words. Throws a
 * ServiceUnreachable, whose message says what to do, when one does not.
 */
export async function ensureServices(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const databaseUrl = new URL(env.DATABASE_URL || 'mysql://root@127.0.0.1:3306/flashsale');
  const mariadbPort = Number(databaseUrl.port || 3306);
  let redis: string;
  if (env.REDIS_CLUSTER_NODES) {
    redis = await ensureCluster(clusterNodesOf(env.REDIS_CLUSTER_NODES));
  } else if (env.REDIS_SENTINELS) {
    redis = await ensureSentinels(env.REDIS_SENTINELS, env.REDIS_SENTINEL_MASTER || 'mymaster');
  } else {
    const redisUrl = new URL(env.REDIS_URL || 'redis://127.0.0.1:6379');
    await ensure('Redis', redisUrl, () => redisAnswers(redisUrl.href), startRedis(Number(redisUrl.port || 6379)), 'REDIS_URL');
    redis = `Redis at ${redisUrl.hostname}:${redisUrl.port || 6379}`;
  }
  await ensure('MariaDB', databaseUrl, () => mariadbAnswers(databaseUrl.href), mariadbPort === 3306 ? START_MARIADB : null, 'DATABASE_URL');
  const galera = await galeraNodeOf(databaseUrl.href, Number(env.GALERA_MIN_NODES || 1));
  return `${redis} and MariaDB at ${databaseUrl.hostname}:${mariadbPort}${galera} answer`;
}

/**
 * When DATABASE_URL reaches a Galera node (HAProxy's address, say: docs/operations.md, "Running on a
 * Galera cluster"), that node must take queries: Synced (wsrep_local_state 4) and ready, in a primary
 * component of at least `minNodes`. A node outside it answers the handshake and refuses every query.
 * Returns words for the report ('' for one server).
 */
async function galeraNodeOf(databaseUrl: string, minNodes: number): Promise<string> {
  const { database: _database, ...server } = poolConfigFromUrl(databaseUrl);
  const connection = await createConnection({ ...server, connectTimeout: 1000 });
  try {
    const rows = await connection.query<{ Variable_name: string; Value: string }[]>(
      "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_state_uuid', 'wsrep_local_state', 'wsrep_local_state_comment', 'wsrep_ready', 'wsrep_cluster_size')",
    );
    const status = new Map(rows.map((row) => [row.Variable_name, row.Value]));
    if (!status.get('wsrep_cluster_state_uuid')) return '';
    const size = Number(status.get('wsrep_cluster_size'));
    const where = `the Galera node at DATABASE_URL (cluster ${status.get('wsrep_cluster_state_uuid')})`;
    if (status.get('wsrep_local_state') !== '4' || status.get('wsrep_ready') !== 'ON') {
      throw new ServiceUnreachable(
        `${where} is ${status.get('wsrep_local_state_comment')}, ready ${status.get('wsrep_ready')}: it takes no queries; point DATABASE_URL at HAProxy (infra/galera/haproxy.cfg), which sends clients to a Synced node`,
      );
    }
    if (size < minNodes)
      throw new ServiceUnreachable(
        `${where} is in a cluster of ${size} nodes, fewer than GALERA_MIN_NODES=${minNodes}: start the missing nodes`,
      );
    return ` (a Galera node, Synced, cluster of ${size})`;
  } finally {
    await connection.end();
  }
}

/** ensureServices for a command: a service that cannot be reached ends it with one line, not a stack trace. */
export async function ensureServicesOrExit(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  try {
    return await ensureServices(env);
  } catch (error) {
    if (!(error instanceof ServiceUnreachable)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  parseCommandLine({
    usage: `usage: npm run services

Makes sure Redis (REDIS_URL) and MariaDB (DATABASE_URL) answer, starting this machine's own
redis-server and mariadbd when a local one does not; with REDIS_CLUSTER_NODES set, checks that Redis
Cluster instead and starts nothing; with REDIS_SENTINELS set, asks the sentinels for the primary named
REDIS_SENTINEL_MASTER and checks that it answers. When DATABASE_URL reaches a Galera node (through
HAProxy, say), checks that it is Synced and ready, in a cluster of at least GALERA_MIN_NODES (default 1).
Prints what it found; exit 1 with one line when a service cannot be reached. No options.`,
  });
  console.log(await ensureServicesOrExit());
}
