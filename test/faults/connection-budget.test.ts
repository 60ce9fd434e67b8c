import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection, type Connection } from 'mariadb';
import {
  createHttpClient,
  ledgerOf,
  purchaseBurst,
  spawnGateway,
  spawnWorker,
  startMariaDbServer,
  tcpPortsByProcess,
  testDatabaseName,
  type AppProcess,
  type MariaDbServer,
} from '@flashsale/harness';
import { migrate } from '@flashsale/order-store';
import { createTestContext, type TestContext } from '../support/context.ts';
import { until } from '../support/until.ts';

// The incident at small scale: 16 gateway processes on a MariaDB of 151 connections held them all from
// their start, idle, and the workers got "pool timeout": 500 202s, 0 orders after 30 s. Here 8 gateway
// processes of the default pools (4 for buyers, 2 for the dashboard) on a MariaDB of 32: at full pools
// they would hold more than every connection, and the check at start says so. The gateways, the worker
// and the test connect as users of their own, so the server's process list tells whose each connection is.

const MAX_CONNECTIONS = 32;
const GATEWAY_PROCESSES = 8;
/** Under the 2 s of the gateway's live-sale refresh, so an idle gateway process comes down to one connection. */
const IDLE_TIMEOUT_MS = 1000;

let mariadb: MariaDbServer;
let admin: Connection;
let ctx: TestContext;
const urls = { gateway: '', worker: '' };
const processes: AppProcess[] = [];

beforeAll(async () => {
  mariadb = await startMariaDbServer({ args: [`--max-connections=${MAX_CONNECTIONS}`] });
  const database = testDatabaseName('budget');
  await migrate(mariadb.url(database));
  admin = await createConnection({ host: '127.0.0.1', port: mariadb.port, user: 'root', password: '' });
  for (const role of ['gateway', 'worker'] as const) {
    await admin.query(`CREATE USER '${role}'@'127.0.0.1'`);
    await admin.query(`GRANT ALL PRIVILEGES ON \`${database}\`.* TO '${role}'@'127.0.0.1'`);
    urls[role] = `mysql://${role}@127.0.0.1:${mariadb.port}/${database}`;
  }
  ctx = createTestContext({ DATABASE_URL: mariadb.url(database) });
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill('SIGKILL')));
  await ctx?.close();
  await admin?.end();
  await mariadb?.stop();
});

/** Connections the server has open for `user`. */
async function connectionsOf(user: 'gateway' | 'worker'): Promise<number> {
  const [row] = await admin.query<{ n: number | bigint }[]>('SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE USER = ?', [
    user,
  ]);
  return Number(row!.n);
}

/**
 * The gateway's connections as MariaDB sees them (command, seconds in it, state, query), each with the
 * process of the gateway's group that holds it (by its local port), if any.
 */
async function gatewayConnections(groupId: number) {
  const rows = await admin.query<{ ID: number; HOST: string; COMMAND: string; TIME: number; STATE: string; INFO: string | null }[]>(
    "SELECT ID, HOST, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST WHERE USER = 'gateway'",
  );
  const owners = [...tcpPortsByProcess(groupId, mariadb.port)];
  return rows.map((row) => {
    const port = Number(row.HOST.slice(row.HOST.lastIndexOf(':') + 1));
    return {
      pid: owners.find(([, local]) => local.has(port))?.[0],
      id: row.ID,
      command: row.COMMAND,
      seconds: row.TIME,
      state: row.STATE,
      info: row.INFO,
    };
  });
}

/**
 * The gateway's connections to the server, by the serving process that holds them: the processes of the
 * gateway's group that hold any, but the group's leader, the supervisor (its check at start, retried on
 * a busy machine, is not a serving process's pool).
 */
async function gatewayConnectionsByProcess(groupId: number): Promise<Map<number, number>> {
  const byProcess = new Map<number, number>();
  for (const { pid } of await gatewayConnections(groupId)) {
    if (pid !== undefined && pid !== groupId) byProcess.set(pid, (byProcess.get(pid) ?? 0) + 1);
  }
  return byProcess;
}

describe(`${GATEWAY_PROCESSES} gateway processes and a worker on a MariaDB with max_connections ${MAX_CONNECTIONS}`, () => {
  it('warns at start that full pools cannot fit, yet every 202 becomes an order, and idle gateway processes come down to one or two connections each', async () => {
    const env = { REDIS_URL: ctx.config.REDIS_URL, REDIS_PREFIX: ctx.config.REDIS_PREFIX };
    const gateway = await spawnGateway({
      ...env,
      DATABASE_URL: urls.gateway,
      GATEWAY_WORKERS: String(GATEWAY_PROCESSES),
      DB_POOL_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
    });
    processes.push(gateway);
    await expect
      .poll(() => gateway.logs.filter((l) => l.msg === 'gateway listening').length, { timeout: 120_000 })
      .toBeGreaterThanOrEqual(GATEWAY_PROCESSES);
    expect(gateway.logs.filter((l) => l.msg === 'gateway listening')).toHaveLength(GATEWAY_PROCESSES);

    // The supervisor, the one process that knows how many gateway processes there are, judges for all.
    const warning = await gateway.waitForLog({
      matches: (l) => String(l.msg).startsWith('MySQL connection budget exceeded'),
      what: 'the "MySQL connection budget exceeded" warning',
    });
    // Each process's pools: the buyers' (GATEWAY_DB_POOL_SIZE 4) and the dashboard's (DASHBOARD_DB_POOL_SIZE 2).
    expect(warning).toMatchObject({
      level: 50,
      role: 'gateway',
      pool: 6,
      processes: GATEWAY_PROCESSES,
      demand: 48,
      workerHeadroom: 10,
      maxConnections: MAX_CONNECTIONS,
    });
    // At least this test's own connection is open, so the 48 do not fit in what is free either.
    const inUse = warning.connectionsInUse as number;
    expect(inUse).toBeGreaterThanOrEqual(1);
    expect(warning.problems).toEqual([
      `${GATEWAY_PROCESSES} gateway processes x pool 6 = 48 connections, plus 10 for a worker, exceed max_connections ${MAX_CONNECTIONS}`,
      `${GATEWAY_PROCESSES} gateway processes x pool 6 = 48 connections, but only ${MAX_CONNECTIONS - inUse} of max_connections ${MAX_CONNECTIONS} are free (${inUse} in use)`,
    ]);
    // One verdict, the supervisor's, not one per process. (A first try MySQL did not answer in time, on a
    // busy machine, is said apart at warn level, "not checked yet", and tried again: not a verdict.)
    expect(gateway.logs.filter((l) => String(l.msg).startsWith('MySQL connection budget exceeded'))).toHaveLength(1);

    const client = createHttpClient(gateway.url, GATEWAY_PROCESSES);
    const adminAuth = { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` };
    const created = await client.send('POST', '/api/admin/sales', {
      headers: adminAuth,
      body: {
        name: 'Budget test',
        stock: 500,
        perUserLimit: 1,
        startsAt: new Date(Date.now() - 60_000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
    });
    expect(created.status).toBe(201);
    const saleId = created.body.id as number;

    // The worker starts after the gateways, as after a deploy or a crash: it must find connections.
    const worker = await spawnWorker({ ...env, DATABASE_URL: urls.worker });
    processes.push(worker);
    const started = Date.now();
    const burst = await purchaseBurst(
      gateway.url,
      saleId,
      Array.from({ length: 500 }, (_, i) => `buyer-${i}`),
    );
    expect(burst.accepted.size).toBe(500);
    await ctx.store.sale(saleId).waitForDrain(60_000);
    const drainMs = Date.now() - started;
    const ledger = await ledgerOf(ctx.store, ctx.prisma, saleId, burst.accepted);
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
    });
    expect({ unitsInDb: ledger.unitsInDb, remaining: ledger.remaining }).toEqual({ unitsInDb: 500, remaining: 0 });
    const workerHeld = await connectionsOf('worker');

    // Reads through every gateway process (one socket each, handed out round-robin): their pools grow...
    const stats = await Promise.all(
      Array.from({ length: GATEWAY_PROCESSES }, () => client.send('GET', `/api/admin/sales/${saleId}/stats`, { headers: adminAuth })),
    );
    client.close();
    expect(stats.map((s) => [s.status, s.body.ordersInDb])).toEqual(Array.from({ length: GATEWAY_PROCESSES }, () => [200, 500]));
    const gatewayPeak = await connectionsOf('gateway');
    // ...and shrink once idle: each process keeps the one connection its live-sale refresh uses every
    // 2 s and closes the rest after DB_POOL_IDLE_TIMEOUT_MS. The driver opens a spare while that one is
    // busy (the pool keeps one idle), and on a busy machine, where the refresh takes longer, a process may
    // keep that spare for minutes (seen beside stress-ng: one of eight at two for a whole minute). So the
    // count is read process by process: every serving process holds one or two, never none, never more:
    // 16 at most of the 48 their pools may open.
    await until(
      async () => [...(await gatewayConnectionsByProcess(gateway.child.pid!)).values()],
      (counts) => counts.length === GATEWAY_PROCESSES && counts.every((n) => n <= 2),
      60_000,
    ).catch(async (error: unknown) => {
      // What each connection was doing, by process: which pool holds the extra one, and since when.
      throw new Error(
        `${(error as Error).message}\nthe gateway's connections now: ${JSON.stringify(await gatewayConnections(gateway.child.pid!))}`,
        {
          cause: error,
        },
      );
    });
    // Then, for 4 s: held so.
    const samples: number[][] = [];
    for (let i = 0; i < 40; i += 1) {
      samples.push([...(await gatewayConnectionsByProcess(gateway.child.pid!)).values()]);
      await sleep(100);
    }
    expect(samples.filter((sample) => sample.length !== GATEWAY_PROCESSES)).toEqual([]);
    const counts = samples.flat();
    expect(Math.max(...counts)).toBeLessThanOrEqual(2);
    console.log(
      `connection budget: 500 202s became 500 orders ${drainMs} ms after the burst began (the worker held ${workerHeld} connections); ` +
        `gateways held ${gatewayPeak} after the reads, then ${Math.min(...counts)}-${Math.max(...counts)} each idle`,
    );
  });
});
