import { spawnSync } from 'node:child_process';
import { createConnection } from 'mariadb';
import { Redis } from 'ioredis';
import { poolConfigFromUrl } from '@flashsale/order-store';

/**
 * Makes sure Redis and MariaDB answer at REDIS_URL and DATABASE_URL, starting the machine's local
 * servers when they are the local defaults and not running (the commands are the ones these machines
 * boot them with: a redis-server on 6379 without persistence, and mariadbd). Used by `npm test`, `npm run demo` and CI.
 */

const LOCAL = new Set(['127.0.0.1', 'localhost', '::1']);

const START_REDIS = ['redis-server', ['--daemonize', 'yes', '--bind', '127.0.0.1', '-::1', '--port', '6379', '--save', '', '--appendonly', 'no', '--dir', '/var/lib/redis', '--logfile', '/var/log/redis/ci.log']] as const;
const START_MARIADB = ['start-stop-daemon', ['--start', '--oknodo', '--background', '--exec', '/usr/sbin/mariadbd']] as const;

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

async function ensure(name: string, host: string, answers: () => Promise<boolean>, start: readonly [string, readonly string[]]): Promise<void> {
  if (await answers()) return;
  if (!LOCAL.has(host)) throw new Error(`${name} at ${host} does not answer; start it or fix its URL`);
  console.log(`${name} does not answer on ${host}; starting the local server: ${start[0]} ${start[1].join(' ')}`);
  const result = spawnSync(start[0], [...start[1]], { stdio: 'inherit' });
  if (result.error) throw new Error(`could not start ${name}: ${result.error.message}`);
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await answers()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${name} did not answer within 20 s of starting it`);
}

export async function ensureServices(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const redisUrl = env.REDIS_URL || 'redis://127.0.0.1:6379';
  const databaseUrl = env.DATABASE_URL || 'mysql://root@127.0.0.1:3306/flashsale';
  await ensure('Redis', new URL(redisUrl).hostname, () => redisAnswers(redisUrl), START_REDIS);
  await ensure('MariaDB', new URL(databaseUrl).hostname, () => mariadbAnswers(databaseUrl), START_MARIADB);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await ensureServices();
  console.log('Redis and MariaDB answer');
}
