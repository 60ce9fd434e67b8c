/**
 * `npm run soak -- --minutes N [--rate R]`: the whole system under sustained load. One gateway, two
 * workers and a reconciler with their default configuration (started as the harness starts them: the
 * per-address rate limit off, as every request comes from this machine), a database and Redis prefix of
 * the run's own, one sale with stock for the whole run, every request a new buyer on the accept path:
 * closed loop with wrk -t1 -c64 by default, or R purchases a second open loop with --rate.
 *
 * Every --sample-seconds (5) it samples each process's RSS and CPU, Redis's memory, the sale stream's
 * length, lag and pending, the gateway's accepts and latency histogram and the orders written. Then it
 * stops the load, waits for the drain and an audit after it, checks the ledger, stops the processes and
 * writes loadtest/results/soak-<timestamp>.html (the report), .svg (the main charts in one figure) and
 * .json (the raw samples). Exits non-zero when the ledger check fails. Options: loadtest/soak/options.ts.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection, type Connection } from 'mariadb';
import { exitWithUsage, loadConfig, parseCommandLine, UsageError } from '@flashsale/config';
import { createRedis, redisNow, createSaleStore } from '@flashsale/redis-store';
import { migrate, poolConfigFromUrl } from '@flashsale/order-store';
import { createHttpClient, gitRevision, spawnGateway, spawnReconciler, spawnWorker, type AppProcess } from '@flashsale/harness';
import { ensureServicesOrExit } from '../../infra/ensure-services.ts';
import { SOAK_COMMAND, soakOptionsOf, stockFor, type SoakOptions } from './options.ts';
import { preparePacedLoad, prepareWrkLoad, type PreparedLoad, type RunningLoad } from './load.ts';
import { mariadbPid, takeSample, type ProcessSource } from './sampler.ts';
import { judgeLedger, type SaleStats } from './ledger.ts';
import { renderReport } from './report.ts';
import { seriesOf } from './analysis.ts';
import type { Sample, SoakParameters, SoakRun } from './sample.ts';

const options = ((): SoakOptions => {
  const { values } = parseCommandLine(SOAK_COMMAND);
  try {
    return soakOptionsOf(values);
  } catch (error) {
    if (error instanceof UsageError) exitWithUsage(SOAK_COMMAND, error.message);
    throw error;
  }
})();
if (options.rate === undefined && spawnSync('wrk', ['--version']).error) {
  console.error('wrk is not on PATH: install it (Debian: apt-get install wrk), or give --rate R for the Node pacer');
  process.exit(2);
}
const log = (text: string) => console.log(`[soak] ${text}`);
const DRAIN_TIMEOUT_MS = 600_000;
const config = loadConfig();
const runId = randomBytes(3).toString('hex');
const databaseUrl = new URL(config.DATABASE_URL);
databaseUrl.pathname = `${databaseUrl.pathname}_soak_${runId}`;
const { database, ...server } = poolConfigFromUrl(databaseUrl.toString());
const startedAt = new Date();
const stamp = startedAt
  .toISOString()
  .replace(/\.\d+Z$/, 'Z')
  .replace(/:/g, '-');

await ensureServicesOrExit();
await migrate(databaseUrl.toString());
const redis = createRedis(config.REDIS_URL);
const store = createSaleStore(redis, `soak-${runId}`);
let db: Connection | undefined;
const apps: { name: string; process: AppProcess }[] = [];
let prepared: PreparedLoad | undefined;
let load: RunningLoad | undefined;
let cleaned: Promise<void> | undefined;

/** Stops what is still running and removes the run's database and Redis keys (unless --keep); once. */
function cleanup(): Promise<void> {
  cleaned ??= (async () => {
    if (load) load.stop();
    else prepared?.cancel();
    await Promise.all(apps.map((app) => app.process.kill('SIGTERM')));
    if (!options.keep) {
      await store.deleteAllKeys();
      const admin = await createConnection(server);
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await admin.end();
    }
    await db?.end().catch(() => undefined);
    await redis.quit();
  })();
  return cleaned;
}
process.once('SIGINT', () => {
  log('interrupted: stopping, removing the run’s data');
  void cleanup().finally(() => process.exit(130));
});

let passed = false;
try {
  // REQUEST_DEADLINE_MS and DB_STATEMENT_TIMEOUT_MS: the stats at the end count the sale's orders in
  // MySQL, millions of them after a long run, which takes longer than a read's defaults (3 s, and 2 s a
  // statement) on a busy box: two 10-minute runs lost their report on it. Both bound only the gateway's
  // reads and admin calls; a purchase's one Redis call has its own timeout.
  const env = {
    REDIS_PREFIX: store.prefix,
    DATABASE_URL: databaseUrl.toString(),
    REDIS_URL: config.REDIS_URL,
    AUTH_SECRET: config.AUTH_SECRET,
    ADMIN_TOKEN: config.ADMIN_TOKEN,
    REQUEST_DEADLINE_MS: '120000',
    DB_STATEMENT_TIMEOUT_MS: '120000',
  };
  const track = async (name: string, started: Promise<AppProcess>) => {
    const app = await started;
    apps.push({ name, process: app });
    return app;
  };
  const [gateway] = await Promise.all([
    track('gateway', spawnGateway(env)) as Promise<AppProcess & { url: string }>,
    track('worker-1', spawnWorker(env)),
    track('worker-2', spawnWorker(env)),
    track('reconciler', spawnReconciler(env)),
  ]);
  const metricsPort = gateway.logs.find((line) => line.msg === 'gateway listening')?.metricsPort;
  if (typeof metricsPort !== 'number') throw new Error('the gateway did not say its metrics port');
  log(`gateway ${gateway.url} (metrics :${metricsPort}), 2 workers, reconciler; Redis prefix ${store.prefix}, database ${database}`);

  const stock = stockFor(options.seconds);
  const admin = createHttpClient(gateway.url, 2);
  const created = await admin.send('POST', '/api/admin/sales', {
    headers: { authorization: `Bearer ${config.ADMIN_TOKEN}` },
    body: {
      name: `soak ${runId}`,
      stock,
      perUserLimit: 1,
      startsAt: new Date(Date.now() - 1000).toISOString(),
      endsAt: new Date(Date.now() + (options.seconds + 3600) * 1000).toISOString(),
    },
  });
  if (created.status !== 201) throw new Error(`creating the sale failed: ${created.status} ${JSON.stringify(created.body)}`);
  const saleId = created.body.id as number;
  db = await createConnection({ ...server, database });
  const mariadb = await mariadbPid(db);

  const loadOptions = {
    url: gateway.url,
    saleId,
    seconds: options.seconds,
    connections: options.connections,
    runId,
    secret: config.AUTH_SECRET,
    ttlSeconds: options.seconds + 3600,
  };
  const processes: Record<string, ProcessSource> = Object.fromEntries(
    apps.map((app) => [app.name, { pids: () => [app.process.child.pid!], descendants: true }]),
  );
  processes['load generator'] = { pids: () => load?.pids() ?? [], descendants: false };
  if (mariadb) processes.mariadb = { pids: () => [mariadb], descendants: false };
  const target = { redis, db, sale: store.sale(saleId), gatewayMetricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, processes };

  const samples: Sample[] = [];
  const failures: string[] = [];
  const logExcerpts: Record<string, string[]> = Object.fromEntries(apps.map((app) => [app.name, []]));
  let t0 = performance.now();
  const elapsed = () => (performance.now() - t0) / 1000;
  let queue = Promise.resolve();
  const sampleNow = () =>
    (queue = queue.then(async () => {
      const sample = await takeSample(target, elapsed(), failures);
      if (load?.takeInterval && samples.length > 0) sample.client = load.takeInterval();
      // The processes' log lines at warn or above since the last sample; the lines are let go, so a long run keeps none.
      sample.warnings = {};
      for (const app of apps) {
        const lines = app.process.logs.splice(0);
        const loud = lines.filter((line) => typeof line.level === 'number' && line.level >= 40);
        if (loud.length > 0) sample.warnings[app.name] = loud.length;
        const excerpts = logExcerpts[app.name]!;
        for (const line of loud) if (excerpts.length < 5) excerpts.push(JSON.stringify(line).slice(0, 400));
      }
      samples.push(sample);
      printProgress(samples);
    }));

  log(
    `load: ${options.rate === undefined ? `closed loop, wrk -t1 -c${options.connections}` : `${options.rate}/s open loop`} for ${options.seconds} s; sale ${saleId}, stock ${stock}; a sample every ${options.sampleSeconds} s`,
  );
  prepared =
    options.rate === undefined
      ? await prepareWrkLoad(loadOptions)
      : preparePacedLoad({ ...loadOptions, rate: options.rate, maxInFlight: options.maxInFlight });
  const loadAverageAtStart = Number(os.loadavg()[0]!.toFixed(2));
  t0 = performance.now();
  await sampleNow();
  load = prepared.start();
  const timer = setInterval(() => void sampleNow(), options.sampleSeconds * 1000);
  const client = await load.done;
  const loadEndT = elapsed();
  clearInterval(timer);
  await sampleNow();
  log(
    `load over after ${loadEndT.toFixed(1)} s: ${client.requests} requests, ${client.ok} 2xx, ${client.refused} other, ${client.errors} errors; client p50 ${client.p50Ms?.toFixed(2)} ms, p99 ${client.p99Ms?.toFixed(2)} ms`,
  );

  // The drain, sampled as it goes; then an audit that read the sale after it.
  const drainTimer = setInterval(() => void sampleNow(), options.sampleSeconds * 1000);
  const drainStarted = performance.now();
  // A drain that does not finish is the run's finding, not a reason to lose it: the ledger then fails
  // on what is still in flight, and the report shows the stream.
  await store
    .sale(saleId)
    .waitForDrain(DRAIN_TIMEOUT_MS, 100)
    .catch((error: unknown) => failures.push(`drain: ${(error as Error).message}`));
  clearInterval(drainTimer);
  const drainSeconds = (performance.now() - drainStarted) / 1000;
  const drainedAt = await redisNow(redis);
  await sampleNow();
  log(`drained ${drainSeconds.toFixed(1)} s after the load; waiting for an audit after it`);
  // An audit of a sale with millions of orders takes a while; without one after the drain, the last one counts (said in the report).
  const auditDeadline = Date.now() + Math.max(60_000, 3 * config.AUDIT_EVERY_MS);
  let auditAfterDrain = false;
  while (Date.now() < auditDeadline) {
    const audit = await store.sale(saleId).auditRecord();
    if (audit && audit.checkedAt >= drainedAt) {
      auditAfterDrain = true;
      break;
    }
    await sleep(250);
  }
  // The stats count the sale's orders in MySQL: with millions of them, on a box still busy with the
  // audit, that can pass the gateway's request deadline (503): asked again for up to two minutes.
  const askStats = () =>
    admin.send('GET', `/api/admin/sales/${saleId}/stats`, { headers: { authorization: `Bearer ${config.ADMIN_TOKEN}` } });
  let statsAnswer = await askStats();
  for (const statsDeadline = Date.now() + 120_000; statsAnswer.status === 503 && Date.now() < statsDeadline; statsAnswer = await askStats())
    await sleep(2000);
  admin.close();
  if (statsAnswer.status !== 200) throw new Error(`the stats endpoint answered ${statsAnswer.status}: ${JSON.stringify(statsAnswer.body)}`);
  const buyersInRedis = await redis.hlen(target.sale.keys.buyers);
  const ledger = judgeLedger({
    stats: statsAnswer.body as unknown as SaleStats,
    buyersInRedis,
    client,
    connections: options.connections,
    auditAfterDrain,
    drainSeconds,
  });

  const exits: Record<string, number | string> = {};
  await Promise.all(apps.map(async (app) => (exits[app.name] = await app.process.kill('SIGTERM'))));

  const parameters: SoakParameters = {
    mode: options.rate === undefined ? 'wrk' : 'rate',
    load: prepared.description,
    connections: options.connections,
    rate: options.rate ?? null,
    loadSeconds: options.seconds,
    sampleSeconds: options.sampleSeconds,
    stock,
    saleId,
    redisPrefix: store.prefix,
    database,
    processes: '1 gateway (GATEWAY_WORKERS 1), 2 workers, 1 reconciler; default configuration, RATE_LIMIT_PER_ADDRESS_PER_SECOND=0',
    commit: gitRevision().commit,
    machine: `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
    node: process.version,
    loadAverageAtStart,
    startedAt: startedAt.toISOString(),
  };
  const { notes: clientNotes, ...clientSummary } = client;
  const run: SoakRun = {
    parameters,
    samples,
    loadEndT,
    client: clientSummary,
    ledger,
    exits,
    logExcerpts,
    notes: [...clientNotes, ...failures],
  };
  const report = renderReport(run);
  mkdirSync(options.outDir, { recursive: true });
  const base = join(options.outDir, `soak-${stamp}`);
  writeFileSync(`${base}.html`, report.html);
  writeFileSync(`${base}.svg`, report.svg);
  writeFileSync(`${base}.json`, `${JSON.stringify({ ...run, totals: report.totals }, null, 1)}\n`);

  const { totals } = report;
  console.log('');
  log(
    `rate: ${Math.round(totals.acceptsPerSecond)} accepts/s over ${loadEndT.toFixed(1)} s (${totals.accepted} accepted${Object.keys(totals.refusals).length ? `, refused ${JSON.stringify(totals.refusals)}` : ''})`,
  );
  log(
    `latency: gateway p50 ${fmt(totals.gatewayP50Ms, 2)} ms, p99 ${fmt(totals.gatewayP99Ms, 2)} ms; client p50 ${fmt(client.p50Ms, 2)} ms, p99 ${fmt(client.p99Ms, 2)} ms`,
  );
  for (const proc of totals.processes) {
    log(
      `${proc.name.padEnd(15)} RSS ${fmt(proc.rssStartMiB)} -> ${fmt(proc.rssEndMiB)} MiB, slope after warm-up ${fmt(proc.rssSlopeMiBPerMin, 2)} MiB/min; CPU ${fmt(proc.cpuSeconds)} s (${fmt(proc.cpuPercent)} % of a core)`,
    );
  }
  log(`reconciler CPU / gateway CPU: ${totals.reconcilerToGatewayCpu === null ? '–' : totals.reconcilerToGatewayCpu.toFixed(3)}`);
  log(
    `ledger: stock ${ledger.stock}, taken in Redis ${ledger.takenInRedis}, buyers ${ledger.buyersInRedis}, orders in MySQL ${ledger.ordersInDb}, units ${ledger.unitsInDb}, in flight ${ledger.inFlight}, dead-lettered ${ledger.deadLettered}, audit drift ${ledger.auditDrift} (${ledger.auditAfterDrain ? 'after the drain' : 'before the drain'}): ${ledger.passed ? 'PASS' : `FAIL: ${ledger.failures.join('; ')}`}`,
  );
  log(
    `why the three counts differ: the load generator's ${client.ok} 2xx are the answers it read before it stopped (up to one per connection more were in flight); ` +
      `the gateway's ${totals.accepted} accepted are its counter between the first and the last sample of the load (the seconds before the first and after the last are not in it); ` +
      `the ${ledger.takenInRedis} units taken in Redis are every purchase the reserve script accepted, in flight ones included: the ledger holds them against MySQL, where they must be equal`,
  );
  log(`exits: ${JSON.stringify(exits)}`);
  log(`report: ${base}.html, ${base}.svg, ${base}.json`);
  for (const note of run.notes) log(`note: ${note}`);
  passed = ledger.passed;
} finally {
  await cleanup();
}
process.exit(passed ? 0 : 1);

function fmt(value: number | null | undefined, digits = 1): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits);
}

function printProgress(samples: Sample[]): void {
  const last = samples.at(-1)!;
  const s = seriesOf(samples);
  const value = (points: [number, number | null][] | undefined) => points?.at(-1)?.[1] ?? null;
  const rss = Object.entries(last.processes)
    .filter(([name]) => name !== 'mariadb' && name !== 'redis')
    .map(
      ([name, p]) =>
        `${name.replace('worker-', 'w').replace('load generator', 'load').replace('reconciler', 'rec').replace('gateway', 'gw')} ${Math.round(p.rssMiB)}`,
    )
    .join(' ');
  log(
    `${last.t.toFixed(0).padStart(5)} s  accepts ${fmt(value(s.acceptsPerSecond), 0)}/s  p50 ${fmt(value(s.gatewayP50Ms), 2)} p99 ${fmt(value(s.gatewayP99Ms), 2)} ms  written ${fmt(value(s.ordersWrittenPerSecond), 0)}/s  RSS MiB ${rss}  stream ${last.stream?.length ?? '–'} lag ${last.stream?.lag ?? '–'} pending ${last.stream?.pending ?? '–'}  redis ${fmt(last.redis?.usedMiB, 0)} MiB`,
  );
}
