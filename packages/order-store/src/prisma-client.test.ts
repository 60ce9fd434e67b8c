import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import { poolConfigFromUrl } from './database-url.ts';
import { createPrisma } from './prisma-client.ts';

// The pool's life on the real MariaDB, counted in the server's process list: a database of the test's
// own tells its connections apart from every other test's.
const shared = new URL(process.env.DATABASE_URL!);
const own = new URL(shared);
// Named as the harness names a run's databases (testDatabaseName), so the run's teardown finds it if left.
own.pathname = `/flashsale_pool_${process.env.FLASHSALE_TEST_RUN ?? 'adhoc'}_${randomBytes(4).toString('hex')}`;
const database = own.pathname.slice(1);

let admin: Connection;
beforeAll(async () => {
  const { database: _database, ...server } = poolConfigFromUrl(shared.toString());
  admin = await createConnection(server);
  await admin.query(`CREATE DATABASE \`${database}\``);
});
afterAll(async () => {
  await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
  await admin.end();
});

async function connectionsOpen(): Promise<number> {
  const [row] = await admin.query<{ n: number | bigint }[]>('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ?', [
    database,
  ]);
  return Number(row!.n);
}

describe('createPrisma pool', () => {
  it('opens connections as queries need them and closes the idle ones down to one', async () => {
    const prisma = createPrisma(own.toString(), 6, 0, { idleTimeoutMs: 1000 });
    try {
      expect(await connectionsOpen()).toBe(0);
      await prisma.$queryRaw`SELECT 1`;
      // One connection and the spare the driver keeps ready, not the pool's six.
      await expect.poll(connectionsOpen, { timeout: 60_000 }).toBe(2);
      await Promise.all(Array.from({ length: 8 }, () => prisma.$queryRaw`SELECT SLEEP(0.3)`));
      expect(await connectionsOpen()).toBe(6);
      // Unused for the idle timeout (1 s, checked every 0.5 s): closed, all but one.
      const idleSince = Date.now();
      await expect.poll(connectionsOpen, { timeout: 60_000 }).toBe(1);
      expect(Date.now() - idleSince).toBeGreaterThanOrEqual(900);
      await sleep(1500);
      expect(await connectionsOpen()).toBe(1);
      await prisma.$queryRaw`SELECT 1`;
    } finally {
      await prisma.$disconnect();
    }
    await expect.poll(connectionsOpen, { timeout: 60_000 }).toBe(0);
  });
});
