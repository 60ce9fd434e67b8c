/**
 * `npm run loadtest -- <flash-crowd|duplicate-storm|sustained> [--smoke] [--node] [--keep] [--out DIR]`
 *
 * With `k6` on PATH (and no --node): `k6 run loadtest/k6/<scenario>.js`, then the invariant check of the
 * sales it made. Otherwise the Node runner plays the same shape (loadtest/k6/lib/shapes.js); it says
 * which it used. Against BASE_URL when set (a system of yours: its sales stay there, checked in
 * DATABASE_URL under REDIS_PREFIX). Otherwise a system of its own, as the soak does: a gateway and two
 * workers on a database (`<DATABASE_URL's database>_loadtest_<run>`) and a Redis prefix
 * (`loadtest-<run>`) of the run's own, both removed afterwards (unless --keep), so a load run leaves
 * nothing in the database or Redis your own processes use. Redis is REDIS_URL, or the Redis Cluster of
 * REDIS_CLUSTER_NODES when that is set (the processes are told the same). The report is printed and
 * written to <DIR>/<scenario>-<k6|node>.json; the exit code is non-zero when a threshold or an invariant
 * fails.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { createRedis, redisTargetOf, createSaleStore } from '@flashsale/redis-store';
import { createPrisma, dropDatabase, migrate, poolConfigFromUrl } from '@flashsale/order-store';
import { redisEnvOf, spawnGateway, spawnWorker, type AppProcess } from '@flashsale/harness';
import { ensureServicesOrExit } from '../infra/ensure-services.ts';
import { SCENARIOS, smokeOf, type ScenarioName } from './k6/lib/shapes.js';
import { runScenario } from './runner/scenario-run.ts';
import { checkSaleInvariants, invariantsHold } from './runner/invariants.ts';
import { printReport } from './runner/report.ts';

const COMMAND = {
  usage: `usage: npm run loadtest -- <${Object.keys(SCENARIOS).join('|')}> [--smoke] [--node] [--keep] [--out DIR]

Plays a load scenario with k6 when k6 is on PATH, else with the Node runner (same shapes), then checks
every sale it made: nothing lost, duplicated, unexpected or oversold, units + remaining = stock.
Without BASE_URL it starts a gateway and two workers of its own, on a database
(<DATABASE_URL's database>_loadtest_<run>) and a Redis prefix (loadtest-<run>) of the run's own, removed
afterwards; with BASE_URL it loads that system and checks it in DATABASE_URL under REDIS_PREFIX.

  flash-crowd       one sale, a crowd far larger than its stock at once
  duplicate-storm   a few buyers retrying the same purchase over and over
  sustained         a steady rate spread over several sales
  --smoke           two seconds of the shape instead of the whole run
  --node            the Node runner even where k6 is on PATH
  --keep            keep the run's database and Redis keys (removed by default)
  --out DIR         where the report goes (default loadtest/results)`,
  options: {
    smoke: { type: 'boolean', default: false },
    node: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    out: { type: 'string', default: 'loadtest/results' },
  },
  allowPositionals: true,
} as const;
const { values: options, positionals } = parseCommandLine(COMMAND);
const [scenarioArg, ...extra] = positionals;
if (scenarioArg === undefined) exitWithUsage(COMMAND, 'no scenario given');
if (!(scenarioArg in SCENARIOS)) exitWithUsage(COMMAND, `unknown scenario: ${scenarioArg}`);
if (extra.length > 0) exitWithUsage(COMMAND, `unexpected arguments: ${extra.join(' ')}`);
const scenario = scenarioArg as ScenarioName;
const k6Version = spawnSync('k6', ['version'], { encoding: 'utf8' });
const useK6 = !options.node && k6Version.status === 0;
console.log(useK6 ? `runner: ${k6Version.stdout.trim()}` : `runner: the Node runner (${options.node ? '--node given' : 'no k6 on PATH'})`);
const config = loadConfig();
mkdirSync(options.out, { recursive: true });

console.log(await ensureServicesOrExit());
const redisTarget = redisTargetOf(config);
const redis = createRedis(redisTarget);
const runId = randomBytes(3).toString('hex');
/** The database and Redis prefix of the system this run starts, when it starts one (no BASE_URL): they go with it. */
const own = process.env.BASE_URL
  ? undefined
  : (() => {
      const url = new URL(config.DATABASE_URL);
      url.pathname = `${url.pathname}_loadtest_${runId}`;
      return { databaseUrl: url.toString(), database: poolConfigFromUrl(url.toString()).database, prefix: `loadtest-${runId}` };
    })();
const databaseUrl = own?.databaseUrl ?? config.DATABASE_URL;
const store = createSaleStore(redis, own?.prefix ?? config.REDIS_PREFIX);
const prisma = createPrisma(databaseUrl, 2);
const processes: AppProcess[] = [];
let passed = false;
let cleaned: Promise<void> | undefined;

/** Stops the processes it started and removes its database and Redis keys (unless --keep); once. */
function cleanup(): Promise<void> {
  cleaned ??= (async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await prisma.$disconnect();
    if (own && !options.keep) {
      // One Redis, or each master of a cluster.
      await store.deleteAllKeys();
      await dropDatabase(own.databaseUrl);
      console.log(`removed the run's database ${own.database} and its Redis keys under ${own.prefix}`);
    } else if (own) {
      console.log(`kept (--keep): database ${own.database}, Redis keys under ${own.prefix}`);
    }
    await redis.quit();
  })();
  return cleaned;
}
process.once('SIGINT', () => {
  console.log('interrupted: stopping, removing the run’s data');
  void cleanup().finally(() => process.exit(130));
});

try {
  let baseUrl = process.env.BASE_URL;
  if (own) {
    await migrate(own.databaseUrl);
    const env = { REDIS_PREFIX: own.prefix, DATABASE_URL: own.databaseUrl, ...redisEnvOf(redisTarget), LOG_LEVEL: 'info' };
    // Every purchase of the load comes from this one address: the per-address budget and connection cap,
    // meant for a crowd of addresses, would refuse the load generator itself (flash-crowd holds up to 256
    // connections, the cap's default, besides the one that created the sale).
    const gatewayEnv = { ...env, RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0', MAX_CONNECTIONS_PER_ADDRESS: '0' };
    const track = <T extends AppProcess>(started: Promise<T>) => started.then((p) => (processes.push(p), p));
    const [gateway] = await Promise.all([track(spawnGateway(gatewayEnv)), track(spawnWorker(env)), track(spawnWorker(env))]);
    baseUrl = gateway.url;
    console.log(`system of its own: gateway ${baseUrl}, 2 workers, database ${own.database}, Redis prefix ${own.prefix}`);
  }
  if (useK6) {
    const summaryPath = join(options.out, `${scenario}-k6.json`);
    const k6 = spawnSync('k6', ['run', `loadtest/k6/${scenario}.js`], {
      stdio: 'inherit',
      env: {
        ...process.env,
        BASE_URL: baseUrl,
        ADMIN_TOKEN: config.ADMIN_TOKEN,
        AUTH_SECRET: config.AUTH_SECRET,
        SUMMARY_PATH: summaryPath,
        ...(options.smoke ? { SMOKE_SECONDS: '2' } : {}),
      },
    });
    // k6 wrote the Node runner's report, less the invariants it cannot read: they are added here, after
    // the streams have drained.
    const report = JSON.parse(readFileSync(summaryPath, 'utf8')) as { saleIds: number[]; invariants: unknown[]; passed: boolean };
    for (const saleId of report.saleIds) await store.sale(saleId).waitForDrain(60_000);
    const invariants = [];
    for (const saleId of report.saleIds) invariants.push(await checkSaleInvariants(store, prisma, saleId));
    console.table(invariants);
    passed = k6.status === 0 && invariantsHold(invariants);
    writeFileSync(summaryPath, `${JSON.stringify({ ...report, invariants, passed }, null, 2)}\n`);
  } else {
    const shape = options.smoke ? smokeOf(SCENARIOS[scenario], 2) : SCENARIOS[scenario];
    console.log(`${scenario}${options.smoke ? ' (smoke)' : ''}: ${shape.description}`);
    const report = await runScenario(
      scenario,
      shape,
      { baseUrl: baseUrl!, adminToken: config.ADMIN_TOKEN, authSecret: config.AUTH_SECRET, store, prisma },
      (p) =>
        console.log(
          `  ${p.elapsedSeconds.toFixed(0).padStart(4)} s  sent ${p.sent}  in flight ${p.inFlight}  dropped ${p.dropped}  ${JSON.stringify(p.outcomes)}`,
        ),
    );
    writeFileSync(join(options.out, `${scenario}-node.json`), `${JSON.stringify(report, null, 2)}\n`);
    printReport(report);
    passed = report.passed;
  }
} finally {
  await cleanup();
}
console.log(passed ? 'PASSED: thresholds met, every invariant holds' : 'FAILED: see above');
process.exit(passed ? 0 : 1);
