import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import {
  createHttpClient,
  mapConcurrently,
  spawnGateway,
  startMariaDbServer,
  testDatabaseName,
  type AppProcess,
  type MariaDbServer,
} from '@flashsale/harness';
import { migrate } from '@flashsale/order-store';
import { createTestContext, type TestContext } from '../support/context.ts';
import { until } from '../support/until.ts';

// An outsider's flood of made-up sale ids, unauthenticated: every miss used to cost MySQL a query, with
// no budget (13,581 answers, all 404, not one 429, and an honest buyer's lookups ten times slower). Here
// a real gateway of two processes on a MariaDB of the test's own, whose SELECTs are counted
// (Com_select): a miss is remembered, a creation on any process is heard by all, and past the budget
// an address gets 429 RATE_LIMITED with Retry-After.

const BUDGET = 50;
/** Long, so that a sale found at once after its creation can only have been heard of, not expired. */
const MISS_TTL_MS = 60_000;

let mariadb: MariaDbServer;
let admin: Connection;
let ctx: TestContext;
let gateway: AppProcess & { url: string };

beforeAll(async () => {
  mariadb = await startMariaDbServer();
  const database = testDatabaseName('misses');
  await migrate(mariadb.url(database));
  admin = await createConnection({ host: '127.0.0.1', port: mariadb.port, user: 'root', password: '' });
  ctx = createTestContext({ DATABASE_URL: mariadb.url(database) });
  gateway = await spawnGateway({
    REDIS_URL: ctx.config.REDIS_URL,
    REDIS_PREFIX: ctx.config.REDIS_PREFIX,
    DATABASE_URL: mariadb.url(database),
    GATEWAY_WORKERS: '2',
    PUBLIC_READS_PER_ADDRESS_PER_SECOND: String(BUDGET),
    SALE_MISS_TTL_MS: String(MISS_TTL_MS),
    // The gateway's own background reads, out of the counts' way.
    LIVE_SALES_REFRESH_MS: '600000',
  });
  // Both processes hear the sale events (until then they remember no miss).
  await until(
    async () => gateway.logs.filter((l) => l.msg === 'sale events subscribed: verdict cache on').length,
    (n) => n === 2,
    60_000,
  );
}, 180_000);
afterAll(async () => {
  await gateway?.kill('SIGKILL');
  await ctx?.close();
  await admin?.end();
  await mariadb?.stop();
});

async function selects(): Promise<number> {
  const [row] = await admin.query<{ Value: string }[]>("SHOW GLOBAL STATUS LIKE 'Com_select'");
  return Number(row!.Value);
}

/** `n` GETs of the paths given, 16 at a time, from this one address; the answers' statuses counted, and the SELECTs MySQL ran meanwhile. */
async function flood(paths: (i: number) => string, n: number) {
  const client = createHttpClient(gateway.url, 16);
  // Counted from a quiet MySQL: the processes' own reads at start (their checks, the live sales) are done.
  let before = await selects();
  for (let quiet = 0; quiet < 4;) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await selects();
    quiet = now === before ? quiet + 1 : 0;
    before = now;
  }
  const started = performance.now();
  const statuses: Record<number, number> = {};
  let retryAfter: unknown;
  await mapConcurrently(
    Array.from({ length: n }, (_, i) => i),
    16,
    async (i) => {
      const res = await client.send('GET', paths(i));
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 429) retryAfter = { header: res.headers['retry-after'], code: res.body.code };
    },
  );
  const seconds = (performance.now() - started) / 1000;
  const queries = (await selects()) - before;
  client.close();
  return { statuses, retryAfter, seconds, queries };
}

describe('GET /api/sales/:id for ids no sale has, unauthenticated, from one address', () => {
  it('one unknown id 2,000 times: a query per process per TTL at most, and 429 RATE_LIMITED with Retry-After past the budget', async () => {
    const outcome = await flood(() => '/api/sales/99999', 2000);
    console.log(
      `one unknown id x 2000: ${JSON.stringify(outcome.statuses)} in ${outcome.seconds.toFixed(1)} s, ${outcome.queries} SELECTs`,
    );
    expect(Object.keys(outcome.statuses).sort()).toEqual(['404', '429']);
    // Two processes, each budgeting the address on its own: BUDGET a second each, plus a first second's.
    expect(outcome.statuses[404]).toBeLessThanOrEqual(2 * BUDGET * (Math.ceil(outcome.seconds) + 1));
    expect(outcome.retryAfter).toEqual({ header: '1', code: 'RATE_LIMITED' });
    // Remembered: one SELECT per process (the TTL is longer than the test).
    expect(outcome.queries).toBeLessThanOrEqual(2);
  });

  it('1,000 distinct unknown ids: MySQL asked at most the budget a second', async () => {
    const outcome = await flood((i) => `/api/sales/${200_000 + i}`, 1000);
    console.log(
      `distinct unknown ids x 1000: ${JSON.stringify(outcome.statuses)} in ${outcome.seconds.toFixed(1)} s, ${outcome.queries} SELECTs`,
    );
    expect(outcome.statuses[429]).toBeGreaterThan(0);
    expect(outcome.queries).toBeLessThanOrEqual(outcome.statuses[404]!);
    expect(outcome.queries).toBeLessThanOrEqual(2 * BUDGET * (Math.ceil(outcome.seconds) + 1));
  });

  it('an id remembered as missing by both processes is found at once once a sale of it is created, whichever process created it', async () => {
    // The budget of the floods above is spent again within a second.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const client = createHttpClient(gateway.url, 4);
    const [row] = await admin.query<{ next: number | bigint }[]>(
      "SELECT AUTO_INCREMENT AS next FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'sales'",
      [new URL(ctx.config.DATABASE_URL).pathname.slice(1)],
    );
    const nextId = Number(row!.next);
    // Asked on several connections, so both processes remember the miss.
    const asked = await Promise.all(Array.from({ length: 8 }, () => client.send('GET', `/api/sales/${nextId}`)));
    expect(asked.map((res) => res.status)).toEqual(Array(8).fill(404));

    const created = await client.send('POST', '/api/admin/sales', {
      headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` },
      body: {
        name: 'Late',
        stock: 5,
        startsAt: new Date(Date.now() - 60_000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.id).toBe(nextId);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const found = await Promise.all(Array.from({ length: 8 }, () => client.send('GET', `/api/sales/${nextId}`)));
    client.close();
    expect(found.map((res) => res.status)).toEqual(Array(8).fill(200));
  });
});
