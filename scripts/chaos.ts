/**
 * `npm run chaos`: a flash crowd while components are killed (SIGKILL) and restarted on a schedule:
 * workers, a gateway, Redis, MariaDB, the reconciler. Everything runs on servers of its own (a
 * redis-server with appendfsync always, a mariadbd in a temporary directory), so nothing else is touched.
 * Ends with the ledger as a table; exits 1 if an invariant broke. `--matrix` runs the fault matrix
 * instead (scripts/chaos-matrix.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { exitWithUsage, parseCommandLine } from '@flashsale/config';
import { MATRIX_FAULTS, MATRIX_LINKS, MATRIX_SALES } from '@flashsale/harness';
import { runMatrix } from './chaos-matrix.ts';
import { createRedis, createSaleStore } from '@flashsale/redis-store';
import { createPrisma, migrate } from '@flashsale/order-store';
import {
  buyerToken,
  createHttpClient,
  faultLedgerOf,
  freePort,
  spawnGateway,
  spawnReconciler,
  spawnWorker,
  startMariaDbServer,
  startRedisServer,
  type AppProcess,
} from '@flashsale/harness';

/** The flash crowd: units on sale, purchases a second, for how long. */
const CROWD = { stock: 5000, perSecond: 150, ms: 34_000 } as const;

const { values } = parseCommandLine({
  usage: `usage: npm run chaos [-- --matrix [--fault F,...] [--link L,...] [--sale plain|queued]]

Without options: a flash crowd (${CROWD.perSecond} purchases/s for ${CROWD.ms / 1000} s over two gateways, ${CROWD.stock} units) while
workers, a gateway, Redis, MariaDB and the reconciler are SIGKILLed and restarted on a schedule, on a
redis-server and a mariadbd of its own (nothing else touched); then the ledger. Exit 1 if an invariant broke.

--matrix     the fault matrix instead: every fault on every link, on a plain and a queued sale, each cell
             with its own processes behind fault proxies and its own ledger; one table at the end
             (about 30 s a cell, 60 cells). Exit 1 if a cell broke.
--fault      only these faults: ${MATRIX_FAULTS.join(', ')}
--link       only these links: ${MATRIX_LINKS.join(', ')}
--sale       only this sale kind: ${MATRIX_SALES.join(', ')}`,
  options: { matrix: { type: 'boolean' }, fault: { type: 'string' }, link: { type: 'string' }, sale: { type: 'string' } },
});

if (values.matrix) {
  const pick = <T extends string>(given: string | undefined, all: readonly T[], what: string): T[] => {
    if (given === undefined) return [...all];
    const chosen = given.split(',').map((v) => v.trim());
    const unknown = chosen.filter((v) => !(all as readonly string[]).includes(v));
    if (unknown.length > 0) exitWithUsage({ usage: `--${what} takes ${all.join(', ')}` }, `unknown ${what}: ${unknown.join(', ')}`);
    return chosen as T[];
  };
  const cells = pick(values.fault, MATRIX_FAULTS, 'fault').flatMap((fault) =>
    pick(values.link, MATRIX_LINKS, 'link').flatMap((link) =>
      pick(values.sale, MATRIX_SALES, 'sale').map((sale) => ({ fault, link, sale })),
    ),
  );
  process.exit(await runMatrix(cells));
} else if (values.fault !== undefined || values.link !== undefined || values.sale !== undefined) {
  exitWithUsage(
    { usage: 'npm run chaos -- --matrix [--fault F,...] [--link L,...] [--sale plain|queued]' },
    '--fault, --link and --sale go with --matrix',
  );
}

const t0 = Date.now();
const log = (text: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${text}`);

log('starting redis-server (appendfsync always) and mariadbd of our own');
const [redisServer, mariadb] = await Promise.all([startRedisServer({ appendfsync: 'always' }), startMariaDbServer()]);
const databaseUrl = mariadb.url('flashsale_chaos');
await migrate(databaseUrl);
const env = {
  REDIS_URL: redisServer.url,
  REDIS_PREFIX: 'chaos',
  DATABASE_URL: databaseUrl,
  WORKER_CLAIM_IDLE_MS: '2000',
  RECONCILER_WATCH_MS: '500',
  RECONCILER_PUBLISH_GRACE_MS: '2000',
  RATE_LIMIT_PER_SECOND: '100',
  LOG_LEVEL: 'info',
};
const redis = createRedis(redisServer.url, { maxRetriesPerRequest: null });
const store = createSaleStore(redis, env.REDIS_PREFIX);
const prisma = createPrisma(databaseUrl, 2);

// Fixed ports, so a restarted gateway is found where the load balancer (here: the load loop) expects it.
const gatewayPorts = [await freePort(), await freePort()];
const processes: Record<string, AppProcess> = {};
const starters: Record<string, () => Promise<AppProcess>> = {
  'gateway-1': () => spawnGateway({ ...env, PORT: String(gatewayPorts[0]) }),
  'gateway-2': () => spawnGateway({ ...env, PORT: String(gatewayPorts[1]) }),
  'worker-1': () => spawnWorker(env),
  'worker-2': () => spawnWorker(env),
  reconciler: () => spawnReconciler(env),
};
let exitCode = 0;
try {
  for (const [name, start] of Object.entries(starters)) processes[name] = await start();
  const urls = gatewayPorts.map((port) => `http://127.0.0.1:${port}`);
  const admin = createHttpClient(urls[0]!, 1);
  const created = await admin.send('POST', '/api/admin/sales', {
    headers: { authorization: `Bearer ${process.env.ADMIN_TOKEN ?? 'dev-only-admin-token'}` },
    body: {
      name: 'Chaos sale',
      stock: CROWD.stock,
      perUserLimit: 2,
      startsAt: new Date(Date.now() - 1000).toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    },
  });
  admin.close();
  if (created.status !== 201) throw new Error(`creating the sale failed: ${JSON.stringify(created.body)}`);
  const saleId = created.body.id as number;
  log(`sale ${saleId}: ${CROWD.stock} units; ${CROWD.perSecond} purchases/s for ${CROWD.ms / 1000} s over 2 gateways`);

  const down = new Set<string>();
  const killAndRestart = async (name: string, afterMs: number) => {
    down.add(name);
    if (name === 'redis') await redisServer.kill('SIGKILL');
    else if (name === 'mariadb') await mariadb.kill('SIGKILL');
    else await processes[name]!.kill('SIGKILL');
    log(`SIGKILL ${name}; back in ${afterMs / 1000} s`);
    await sleep(afterMs);
    if (name === 'redis') await redisServer.start();
    else if (name === 'mariadb') await mariadb.start();
    else processes[name] = await starters[name]!();
    down.delete(name);
    log(`${name} restarted`);
  };
  const schedule: [atMs: number, name: string, downMs: number][] = [
    [3_000, 'worker-1', 2_000],
    [7_000, 'gateway-1', 2_000],
    [11_000, 'redis', 500],
    [15_000, 'mariadb', 10_000],
    [19_000, 'worker-2', 2_000],
    [27_000, 'reconciler', 2_000],
    [30_000, 'gateway-2', 1_500],
  ];
  const loadStart = Date.now();
  const chaos = Promise.all(schedule.map(async ([at, name, ms]) => (await sleep(at), killAndRestart(name, ms))));

  const clients = urls.map((url) => createHttpClient(url, 64));
  const accepted = new Map<string, { userId: string; quantity: number }>();
  const outcomes: Record<string, number> = {};
  const uncertain = new Set<string>();
  const inFlight: Promise<void>[] = [];
  const total = Math.floor((CROWD.ms / 1000) * CROWD.perSecond);
  for (let i = 0; i < total; i++) {
    await sleep(Math.max(0, loadStart + (i * 1000) / CROWD.perSecond - Date.now()));
    const userId = `chaos-buyer-${i}`;
    const quantity = (i % 2) + 1;
    const gateway = i % 2;
    inFlight.push(
      (async () => {
        const token = buyerToken(userId);
        try {
          const res = await clients[gateway]!.send('POST', `/api/sales/${saleId}/purchase`, {
            headers: { authorization: `Bearer ${token}` },
            body: { quantity },
          });
          const label = res.status === 202 ? '202 accepted' : `${res.status} ${String(res.body.code)}`;
          outcomes[label] = (outcomes[label] ?? 0) + 1;
          if (res.status === 202) accepted.set(res.body.reservationId as string, { userId, quantity });
          else if (res.status >= 500 && res.body.code !== 'SALE_PAUSED') uncertain.add(userId);
        } catch {
          outcomes['no answer (connection cut)'] = (outcomes['no answer (connection cut)'] ?? 0) + 1;
          uncertain.add(userId);
        }
      })(),
    );
  }
  await Promise.all(inFlight);
  await chaos;
  for (const c of clients) c.close();
  log('load over; waiting for the workers to drain the stream');
  await store.sale(saleId).waitForDrain(180_000);

  const ledger = await faultLedgerOf(store, prisma, saleId, accepted, uncertain);
  const sale = await prisma.sale.findUniqueOrThrow({ where: { id: saleId } });
  console.log('\nOutcomes of the purchase requests');
  console.table(
    Object.fromEntries(
      Object.entries(outcomes)
        .sort()
        .map(([k, v]) => [k, { requests: v }]),
    ),
  );
  console.log('Ledger');
  console.table({
    stock: { value: CROWD.stock },
    '202 accepted': { value: accepted.size },
    'units accepted (202)': { value: [...accepted.values()].reduce((s, a) => s + a.quantity, 0) },
    'units in MySQL orders': { value: ledger.unitsInDb },
    'remaining in Redis': { value: ledger.remaining },
    'units + remaining (= stock?)': { value: `${ledger.unitsInDb + ledger.remaining} / ${CROWD.stock}` },
    'lost (202 without order)': { value: ledger.lost.length },
    duplicated: { value: ledger.duplicated.length },
    'unexpected (order without 202)': { value: ledger.unexpected.length },
    'oversold units': { value: ledger.oversold },
    'no clear answer -> order': { value: ledger.unknownBecameOrders },
    'no clear answer -> nothing': { value: ledger.unknownBecameNothing },
    'lost with Redis data (reconciler)': { value: sale.lostReservations },
  });
  const broken =
    ledger.lost.length > 0 ||
    ledger.duplicated.length > 0 ||
    ledger.unexpected.length > 0 ||
    ledger.oversold > 0 ||
    ledger.unitsInDb + ledger.remaining !== CROWD.stock;
  console.log(
    broken ? 'INVARIANT BROKEN' : 'All invariants hold: nothing lost, doubled, unexpected or oversold, and units + remaining = stock.',
  );
  exitCode = broken ? 1 : 0;
} catch (error) {
  console.error(error);
  exitCode = 1;
} finally {
  await Promise.all(Object.values(processes).map((p) => p.kill('SIGKILL')));
  redis.disconnect();
  await prisma.$disconnect();
  await Promise.all([redisServer.stop(), mariadb.stop()]);
}
process.exit(exitCode);
