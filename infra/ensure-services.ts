import { spawnSync } from 'node:child_process';
import { createConnection } from 'mariadb';
import { Redis } from 'ioredis';
import { poolConfigFromUrl } from '@flashsale/order-store';

/**
 * Makes sure Redis and MariaDB answer at REDIS_URL and DATABASE_URL. A service that does not answer at
 * a local address is started from the machine's own packages (Debian's redis-server, without
 * persistence, on the configured port; mariadbd, which listens where its own configuration says, so only
 * when 3306 is configured); anything else gets one line saying what to do. Used by `npm test`, `npm run
 * demo` and CI.
 */

const LOCAL = new Set(['127.0.0.1', 'localhost', '::1']);

const startRedis = (port: number) =>
  ['redis-server', ['--daemonize', 'yes', '--bind', '127.0.0.1', '-::1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', '/var/lib/redis', '--logfile', `/var/log/redis/flashsale-${port}.log`]] as const;
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

async function ensure(name: string, url: URL, answers: () => Promise<boolean>, start: readonly [string, readonly string[]] | null, variable: string): Promise<void> {
  if (await answers()) return;
  const where = `${url.hostname}:${url.port || (url.protocol.startsWith('redis') ? 6379 : 3306)}`;
  const todo = `start it (e.g. docker compose -f infra/docker-compose.yml up -d ${name === 'Redis' ? 'redis' : 'mariadb'}) or set ${variable} to where it runs`;
  if (!LOCAL.has(url.hostname) || !start) throw new ServiceUnreachable(`${name} does not answer at ${where}: ${todo}`);
  console.log(`${name} does not answer at ${where}; starting the local server: ${start[0]} ${start[1].join(' ')}`);
  const result = spawnSync(start[0], [...start[1]], { stdio: 'inherit' });
  if (result.error || result.status !== 0) throw new ServiceUnreachable(`${name} does not answer at ${where} and ${start[0]} could not start it: ${todo}`);
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await answers()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new ServiceUnreachable(`${name} did not answer at ${where} within 20 s of starting it: ${todo}`);
}

export async function ensureServices(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const redisUrl = new URL(env.REDIS_URL || 'redis://127.0.0.1:6379');
  const databaseUrl = new URL(env.DATABASE_URL || 'mysql://root@127.0.0.1:3306/flashsale');
  const mariadbPort = Number(databaseUrl.port || 3306);
  await ensure('Redis', redisUrl, () => redisAnswers(redisUrl.href), startRedis(Number(redisUrl.port || 6379)), 'REDIS_URL');
  await ensure('MariaDB', databaseUrl, () => mariadbAnswers(databaseUrl.href), mariadbPort === 3306 ? START_MARIADB : null, 'DATABASE_URL');
}

/** ensureServices for a command: a service that cannot be reached ends it with one line, not a stack trace. */
export async function ensureServicesOrExit(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  try {
    await ensureServices(env);
  } catch (error) {
    if (!(error instanceof ServiceUnreachable)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await ensureServicesOrExit();
  console.log('Redis and MariaDB answer');
}
