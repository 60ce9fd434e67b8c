/**
 * `npm run demo`: the whole system end to end on this machine. Services up, migrations applied, a
 * gateway, two workers and a reconciler started as real processes, a sale published through the admin
 * API, a flash crowd of buyers fired at it, the drain awaited, the ledger checked against MySQL, a report
 * printed, everything stopped. Exits non-zero if any invariant does not hold. On one Redis (REDIS_URL),
 * or on a Redis Cluster with REDIS_CLUSTER_NODES set.
 *
 * The operator's dashboard is printed while the sale runs. Options, for a person to watch it: see the
 * usage below (--keep holds the system mid-sale, --pace slows the crowd, --screenshot saves the dashboard;
 * --queue shows a sale behind the waiting room instead: demo-queue.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection } from 'mariadb';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { createRedis, redisTargetOf, createSaleStore } from '@flashsale/redis-store';
import { createPrisma, migrate, poolConfigFromUrl } from '@flashsale/order-store';
import {
  signBuyerTokens,
  createHttpClient,
  ledgerOf,
  mapConcurrently,
  percentile,
  launchChromium,
  redisEnvOf,
  signInToDashboard,
  spawnGateway,
  spawnReconciler,
  spawnWorker,
  type AppProcess,
} from '@flashsale/harness';
import { ensureServicesOrExit } from '../infra/ensure-services.ts';
import { runLifecycle } from './demo-lifecycle.ts';
import { runQueueDemo } from './demo-queue.ts';
import { screenshotBuyerPage } from './demo-buyer-page.ts';

const STOCK = 1000;
const BUYERS = 3000;
const ATTEMPTS_PER_BUYER = 2;
const CONNECTIONS = 64;
/** Long enough for the demo's winners to pay, short enough to watch the rest expire. */
const PAYMENT_WINDOW_SECONDS = 15;

const COMMAND = {
  usage: `usage: npm run demo -- [--keep] [--pace <n>] [--screenshot <file>] | --queue

The whole system on this machine: services up, migrations, a gateway, two workers and a reconciler,
a sale of ${STOCK} units, ${BUYERS} buyers trying ${ATTEMPTS_PER_BUYER} times each, the ledger checked against MySQL; then
the orders' lifecycle (payments, cancels, expiry, the units sold again). Exit 1 if an invariant breaks.
Its own database (<DATABASE_URL's>_demo) and Redis prefix (demo).

  --keep              hold the crowd mid-sale (half the stock sold; paces at 150/s) with everything up,
                      to look at the dashboard or buy by hand; Enter goes on with the demo,
                      Ctrl-C stops everything there (exit 130). Orders whose payment window runs
                      out meanwhile expire, and their units go back on sale, as they would.
  --pace <n>          send the purchases at n a second instead of all at once
  --screenshot <f>    save a screenshot of the dashboard mid-sale to f (Debian's chromium; paces at 150/s)
  --queue             instead, a sale behind a waiting room, from the pre-queue to sold out: the draw at
                      the start, admission at the door's rate within the stock, an abandoned turn, a
                      cancelled unit going to the next in line, sold_out told to everyone still waiting;
                      with --screenshot <f>, the buyer's page on a queued sale of its own: mid-queue to
                      f, at the receipt to f with -receipt before its extension`,
  options: {
    keep: { type: 'boolean', default: false },
    pace: { type: 'string' },
    screenshot: { type: 'string' },
    queue: { type: 'boolean', default: false },
  },
} as const;
const { values: options } = parseCommandLine(COMMAND);

/** Ctrl-C while the demo was held mid-sale (--keep): everything stops there. */
class StoppedMidSale extends Error {}
const screenshotPath = options.screenshot;
const pace = options.pace !== undefined ? Number(options.pace) : screenshotPath !== undefined || options.keep ? 150 : undefined;
// A paced crowd takes a while: every winner still has the window's 15 s after the last purchase.
const paymentWindowSeconds = PAYMENT_WINDOW_SECONDS + (pace === undefined ? 0 : Math.ceil((BUYERS * ATTEMPTS_PER_BUYER) / pace));
if (pace !== undefined && !(Number.isInteger(pace) && pace > 0))
  exitWithUsage(COMMAND, `--pace must be a whole number of purchases a second, not ${options.pace}`);
if (options.queue && (options.keep || options.pace !== undefined))
  exitWithUsage(COMMAND, '--queue runs a demo of its own: without --keep or --pace');

const config = loadConfig();
// One Redis (REDIS_URL), or a Redis Cluster when REDIS_CLUSTER_NODES is set: the processes are told the same.
const redisTarget = redisTargetOf(config);
// A Redis prefix and a database of its own (`<database>_demo`, made anew each run and left for
// inspection), so a demo never meets a previous one's data or a deployment's.
const demoDb = new URL(config.DATABASE_URL);
demoDb.pathname = `${demoDb.pathname}_demo`;
const databaseUrl = demoDb.toString();
const env = { REDIS_PREFIX: 'demo', DATABASE_URL: databaseUrl, ...redisEnvOf(redisTarget), RECONCILER_PORT: '0' };
const step = (text: string) => console.log(`\n== ${text}`);

step('services');
const services = await ensureServicesOrExit();
const { database, ...server } = poolConfigFromUrl(databaseUrl);
const admin0 = await createConnection(server);
await admin0.query(`DROP DATABASE IF EXISTS \`${database}\``);
await admin0.end();
const migrated = await migrate(databaseUrl);
console.log(
  `${services}; database ${migrated.database}: ${migrated.applied.length} migrations applied now, ${migrated.alreadyApplied.length} already`,
);

step('processes: 1 gateway, 2 workers, 1 reconciler');
const processes: AppProcess[] = [];
const redis = createRedis(redisTarget);
const store = createSaleStore(redis, env.REDIS_PREFIX);
const prisma = createPrisma(databaseUrl, 2);
await store.deleteAllKeys();
let failed = false;
let stoppedMidSale = false;
try {
  // Each process is recorded as soon as it exists, so the `finally` below stops it whatever fails next.
  const track = <T extends AppProcess>(started: Promise<T>) => started.then((p) => (processes.push(p), p));
  const [gateway, ...workers] = await Promise.all([track(spawnGateway(env)), track(spawnWorker(env)), track(spawnWorker(env))]);
  const reconciler = await track(spawnReconciler(env));
  console.log(
    `gateway ${gateway.url} (pid ${gateway.child.pid}), workers pid ${workers.map((w) => w.child.pid).join(', ')}, reconciler pid ${reconciler.child.pid}`,
  );
  if (options.queue) {
    failed = (
      await runQueueDemo({
        gatewayUrl: gateway.url,
        store,
        prisma,
        adminToken: config.ADMIN_TOKEN,
        webhookSecret: config.PAYMENT_WEBHOOK_SECRET,
        step,
      })
    ).failed;
    if (screenshotPath !== undefined) {
      step("the buyer's page: mid-queue and at the receipt, in headless Chromium");
      const say = (line: string) => console.log(line);
      // Settled into a line of the report either way: a failed screenshot must not take the demo down with its processes up.
      const shots = await screenshotBuyerPage({
        gatewayUrl: gateway.url,
        redis,
        adminToken: config.ADMIN_TOKEN,
        authSecret: config.AUTH_SECRET,
        path: screenshotPath,
        say,
      }).then(
        (paths) => paths.join(' and '),
        (error: unknown) => `not taken: ${(error as Error).message}`,
      );
      console.log(`screenshots of the buyer's page: ${shots}`);
    }
  } else {
    step(`sale: ${STOCK} units, at most 2 per buyer`);
    const admin = createHttpClient(gateway.url, 2);
    const adminAuth = { authorization: `Bearer ${config.ADMIN_TOKEN}` };
    const created = await admin.send('POST', '/api/admin/sales', {
      headers: adminAuth,
      body: {
        name: 'Demo flash sale',
        stock: STOCK,
        perUserLimit: 2,
        startsAt: new Date(Date.now() - 1000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        // A paced crowd takes a while: every winner still has the window's 15 s after the last purchase.
        paymentWindowSeconds: paymentWindowSeconds,
      },
    });
    if (created.status !== 201) throw new Error(`creating the sale failed: ${created.status} ${JSON.stringify(created.body)}`);
    const saleId = created.body.id as number;
    console.log(JSON.stringify(created.body));
    console.log(
      `dashboard: ${gateway.url}/admin/#sale=${saleId} (sign in with the admin token${config.ADMIN_TOKEN === 'dev-only-admin-token' ? ': dev-only-admin-token' : ''})`,
    );

    step(`flash crowd: ${BUYERS} buyers x ${ATTEMPTS_PER_BUYER} attempts, ${CONNECTIONS} connections`);
    const tokens = signBuyerTokens(Array.from({ length: BUYERS }, (_, i) => `demo-buyer-${i}`));
    const crowd = tokens.flatMap((token, buyer) =>
      Array.from({ length: ATTEMPTS_PER_BUYER }, (_, attempt) => ({ buyer, token, quantity: ((buyer + attempt) % 2) + 1 })),
    );
    const client = createHttpClient(gateway.url, CONNECTIONS);
    // Settled into a line of the report either way: a failed screenshot must not take the demo down with its processes up.
    const shooting =
      screenshotPath === undefined
        ? undefined
        : screenshotMidSale(gateway.url, saleId, screenshotPath).catch((error: unknown) => `not taken: ${(error as Error).message}`);
    const started = performance.now();
    // --keep: once half the stock is sold, every purchase not yet sent waits here for the person.
    const hold = { unitsSold: 0, gate: undefined as Promise<'continue' | 'stop'> | undefined, heldMs: 0 };
    const results = await mapConcurrently(
      crowd.map((r, index) => ({ ...r, index })),
      CONNECTIONS,
      async (r) => {
        // Paced: each purchase waits for its slot, so a person (or the screenshot) sees the sale sell.
        if (pace !== undefined) await sleep(Math.max(0, started + hold.heldMs + (r.index * 1000) / pace - performance.now()));
        if (hold.gate && (await hold.gate) === 'stop') throw new StoppedMidSale();
        const answer = await client.send('POST', `/api/sales/${saleId}/purchase`, {
          headers: { authorization: `Bearer ${r.token}` },
          body: { quantity: r.quantity },
        });
        if (answer.status === 202) hold.unitsSold += r.quantity;
        if (options.keep && !hold.gate && hold.unitsSold >= STOCK / 2)
          hold.gate = holdMidSale(`${gateway.url}/admin/#sale=${saleId}`, hold);
        return { ...r, ...answer };
      },
    );
    const seconds = (performance.now() - started - hold.heldMs) / 1000;
    client.close();
    if (shooting) console.log(`screenshot of the dashboard mid-sale: ${await shooting}`);

    const accepted = new Map<string, { userId: string; quantity: number }>();
    const outcomes: Record<string, number> = {};
    for (const result of results) {
      const label =
        result.status === 202 ? 'purchases answered 202 (accepted)' : `purchases answered ${result.status} ${String(result.body.code)}`;
      outcomes[label] = (outcomes[label] ?? 0) + 1;
      if (result.status === 202)
        accepted.set(result.body.reservationId as string, { userId: `demo-buyer-${result.buyer}`, quantity: result.quantity });
    }

    step('drain: waiting for the workers to write every reservation to MySQL');
    const drainStarted = performance.now();
    await store.sale(saleId).waitForDrain(120_000);
    const drainSeconds = (performance.now() - drainStarted) / 1000;
    const ledger = await ledgerOf(store, prisma, saleId, accepted);
    const stats = await admin.send('GET', `/api/admin/sales/${saleId}/stats`, { headers: adminAuth });
    admin.close();

    const latencies = results.map((r) => r.latencyMs);
    const acceptedUnits = [...accepted.values()].reduce((sum, a) => sum + a.quantity, 0);
    const oversold = Math.max(0, ledger.unitsInDb - ledger.stock);
    step('report');
    console.table({
      'purchase requests sent': { value: results.length },
      'purchase requests answered a second': { value: Math.round(results.length / seconds) },
      ...Object.fromEntries(
        Object.entries(outcomes)
          .sort()
          .map(([k, v]) => [k, { value: v }]),
      ),
      'units accepted (202)': { value: acceptedUnits },
      'orders in MySQL': { value: stats.body.ordersInDb },
      'units in MySQL': { value: ledger.unitsInDb },
      'remaining in Redis': { value: ledger.remaining },
      'units + remaining (= stock?)': { value: `${ledger.unitsInDb + ledger.remaining} / ${ledger.stock}` },
      oversold: { value: oversold },
      'duplicates (reservation or buyer)': { value: ledger.duplicated.length },
      'lost (202 without order)': { value: ledger.lost.length },
      'unexpected (order without 202)': { value: ledger.unexpected.length },
      'latency p50 (ms)': { value: percentile(latencies, 50).toFixed(1) },
      'latency p90 (ms)': { value: percentile(latencies, 90).toFixed(1) },
      'latency p99 (ms)': { value: percentile(latencies, 99).toFixed(1) },
      'latency max (ms)': { value: percentile(latencies, 100).toFixed(1) },
      'drain after the burst (s)': { value: drainSeconds.toFixed(2) },
    });
    console.log(`stats endpoint: ${JSON.stringify(stats.body)}`);
    const errors = Object.keys(outcomes).filter((k) => /^5/.test(k));
    failed =
      oversold > 0 ||
      ledger.duplicated.length > 0 ||
      ledger.lost.length > 0 ||
      ledger.unexpected.length > 0 ||
      ledger.unitsInDb + ledger.remaining !== ledger.stock ||
      stats.body.consistent !== true ||
      errors.length > 0;
    console.log(
      failed
        ? '\nINVARIANT BROKEN: see the report above'
        : '\nAll invariants hold: nothing oversold, no duplicate, every 202 is exactly one order.',
    );
    const lifecycle = await runLifecycle({
      gatewayUrl: gateway.url,
      store,
      saleId,
      stock: STOCK,
      adminToken: config.ADMIN_TOKEN,
      webhookSecret: config.PAYMENT_WEBHOOK_SECRET,
      orders: accepted,
      paymentWindowSeconds,
      step,
    });
    failed ||= lifecycle.failed;
  }
} catch (error) {
  if (!(error instanceof StoppedMidSale)) throw error;
  stoppedMidSale = true;
} finally {
  step('stopping (SIGTERM)');
  const codes = await Promise.all(processes.map((p) => p.kill('SIGTERM')));
  console.log(`exit codes: ${codes.join(', ')}`);
  // The demo's keys go with it; its sale and orders stay in MySQL for inspection.
  await store.deleteAllKeys();
  await redis.quit();
  await prisma.$disconnect();
}
process.exit(stoppedMidSale ? 130 : failed ? 1 : 0);

/**
 * --keep: holds the crowd (the purchases in flight finish) until the person presses Enter ('continue')
 * or Ctrl-C ('stop'), and adds the time held to `hold.heldMs`, so the paced crowd resumes where it was
 * rather than all at once.
 */
async function holdMidSale(dashboard: string, hold: { unitsSold: number; heldMs: number }): Promise<'continue' | 'stop'> {
  const from = performance.now();
  console.log(
    `\n== held mid-sale (--keep): ${hold.unitsSold} of ${STOCK} units sold, the gateway, workers and reconciler up\n` +
      `dashboard: ${dashboard} (admin token${config.ADMIN_TOKEN === 'dev-only-admin-token' ? ': dev-only-admin-token' : ' from ADMIN_TOKEN'})\n` +
      'Enter: the rest of the demo (the crowd, the drain, the report, payments, expiry, the re-sale); Ctrl-C: stop everything now',
  );
  const choice = await new Promise<'continue' | 'stop'>((resolve) => {
    const onEnter = () => done('continue');
    const onSignal = () => done('stop');
    function done(what: 'continue' | 'stop') {
      process.stdin.off('data', onEnter);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.stdin.pause();
      resolve(what);
    }
    process.stdin.on('data', onEnter);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  hold.heldMs += performance.now() - from;
  console.log(choice === 'continue' ? '== going on' : '\n== stopping mid-sale (Ctrl-C)');
  return choice;
}

/**
 * Signs in to the dashboard in headless Chromium, shows the sale, and saves a screenshot once about a
 * third of the stock is gone: the sale mid-way, its charts since the start, its figures live.
 */
async function screenshotMidSale(baseUrl: string, saleId: number, path: string): Promise<string> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await signInToDashboard(page, baseUrl, config.ADMIN_TOKEN);
    await page.waitForSelector('#dashboard:not([hidden])');
    await page.goto(`${baseUrl}/admin/#sale=${saleId}`);
    // Read from here: the page's Content-Security-Policy refuses script evaluated from a string.
    const deadline = performance.now() + 60_000;
    // A third gone, and the shot at once: the page's figures trail the sale by up to a push, and on a
    // busy machine the rest sells within seconds.
    while (Number((await page.getAttribute('#remaining-text', 'data-remaining')) ?? STOCK) > (STOCK * 2) / 3) {
      if (performance.now() > deadline) throw new Error('the sale did not reach two thirds of its stock within 60 s');
      await sleep(100);
    }
    await page.screenshot({ path, fullPage: true });
    return path;
  } finally {
    await browser.close();
  }
}
