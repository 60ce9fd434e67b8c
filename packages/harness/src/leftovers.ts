import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { createConnection } from 'mariadb';
import { poolConfigFromUrl } from '@flashsale/order-store';
import { TEST_RUN_VARIABLE, testDatabasePattern, testRedisPattern } from './test-run.ts';

/** What a test run left behind: processes still running, Redis keys under its prefixes, its databases. */
export interface Leftovers {
  processes: { pid: number; command: string }[];
  keys: string[];
  databases: string[];
}

/** True when nothing is left. */
export function isClean(left: Leftovers): boolean {
  return left.processes.length === 0 && left.keys.length === 0 && left.databases.length === 0;
}

/**
 * Every process started by run `run`: each inherits the run's variable, and keeps it in its environment
 * whatever it turns into (a redis-server renames itself; a gateway's cluster workers are forks). The
 * run's own Vitest processes carry it too, and are not leftovers.
 */
export function processesOfRun(run: string): { pid: number; command: string }[] {
  const marker = `${TEST_RUN_VARIABLE}=${run}`;
  const found: { pid: number; command: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
      if (!environ.includes(marker)) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
      // A zombie has no command line left, and nothing to stop.
      if (command === '' || /vitest/.test(command)) continue;
      found.push({ pid, command: command.slice(0, 160) });
    } catch {
      // Gone meanwhile, or another user's.
    }
  }
  return found;
}

/** Looks for whatever run `run` left behind on the given Redis and MySQL server. */
export async function findLeftovers(run: string, stores: { redisUrl: string; databaseUrl: string }): Promise<Leftovers> {
  const redis = new Redis(stores.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  const keys: string[] = [];
  try {
    let cursor = '0';
    do {
      const [next, page] = await redis.scan(cursor, 'MATCH', testRedisPattern(run), 'COUNT', 1000);
      keys.push(...page);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  const { database: _database, ...server } = poolConfigFromUrl(stores.databaseUrl);
  const connection = await createConnection(server);
  try {
    const rows = await connection.query<Record<string, string>[]>('SHOW DATABASES LIKE ?', [testDatabasePattern(run)]);
    return { processes: processesOfRun(run), keys, databases: rows.map((row) => Object.values(row)[0]!) };
  } finally {
    await connection.end();
  }
}

/** Kills, deletes and drops what `left` lists. */
export async function removeLeftovers(left: Leftovers, stores: { redisUrl: string; databaseUrl: string }): Promise<void> {
  for (const { pid } of left.processes) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
  if (left.keys.length > 0) {
    const redis = new Redis(stores.redisUrl, { maxRetriesPerRequest: 1 });
    for (let i = 0; i < left.keys.length; i += 500) await redis.unlink(...left.keys.slice(i, i + 500));
    redis.disconnect();
  }
  if (left.databases.length > 0) {
    const { database: _database, ...server } = poolConfigFromUrl(stores.databaseUrl);
    const connection = await createConnection(server);
    for (const name of left.databases) await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await connection.end();
  }
}

/** The leftovers as lines a person can act on. */
export function describeLeftovers(left: Leftovers): string {
  return [
    ...left.processes.map(({ pid, command }) => `process ${pid}: ${command}`),
    ...(left.keys.length > 0 ? [`${left.keys.length} Redis key(s), e.g. ${left.keys.slice(0, 5).join(', ')}`] : []),
    ...left.databases.map((name) => `database ${name}`),
  ].join('\n');
}
