/**
 * `npm run loadtest -- <flash-crowd|duplicate-storm|sustained> [--smoke] [--node]`
 *
 * With `k6` on PATH (and no --node): `k6 run loadtest/k6/<scenario>.js`, then the invariant check of the
 * sales it made. Otherwise the Node runner plays the same shape (loadtest/k6/lib/shapes.js); it says
 * which it used. Against BASE_URL when set; otherwise a system of its own (a gateway and two workers,
 * under a Redis prefix of their own, whose keys are deleted afterwards), stopped afterwards. Redis is
 * REDIS_URL, or the Redis Cluster of REDIS_CLUSTER_NODES when that is set (the processes are told the
 * same). The report is printed and written to loadtest/results/<scenario>-<k6|node>.json; the exit code
 * is non-zero when a threshold or an invariant fails.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '@flashsale/config';
import { createRedis, redisTargetOf } from '@flashsale/redis-store';
import { createPrisma, migrate } from '@flashsale/order-store';
import { deleteKeysWithPrefix, redisEnvOf, spawnGateway, spawnWorker, waitForDrain, type AppProcess } from '@flashsale/harness';
import { ensureServicesOrExit } from '../infra/ensure-services.ts';
import { SCENARIOS, smokeOf, type ScenarioName } from './k6/lib/shapes.js';
import { runScenario } from './runner/scenario-run.ts';
import { checkSaleInvariants, invariantsHold } from './runner/invariants.ts';
import { printReport } from './runner/report.ts';

const args = process.argv.slice(2);
const scenario = args.find((arg) => !arg.startsWith('--')) as ScenarioName | undefined;
if (!scenario || !(scenario in SCENARIOS)) {
  console.error(`usage: npm run loadtest -- <${Object.keys(SCENARIOS).join('|')}> [--smoke] [--node]`);
  process.exit(2);
}
const smoke = args.includes('--smoke');
const k6Version = spawnSync('k6', ['version'], { encoding: 'utf8' });
const useK6 = !args.includes('--node') && k6Version.status === 0;
console.log(useK6 ? `runner: ${k6Version.stdout.trim()}` : `runner: the Node runner (${args.includes('--node') ? '--node given' : 'no k6 on PATH'})`);
const config = loadConfig();
mkdirSync('loadtest/results', { recursive: true });

console.log(await ensureServicesOrExit());
const redisTarget = redisTargetOf(config);
const redis = createRedis(redisTarget);
const prisma = createPrisma(config.DATABASE_URL, 2);
const processes: AppProcess[] = [];
let passed = false;
/** The Redis prefix of the system this run started, if it started one: its keys go with it. */
let ownPrefix: string | undefined;
try {
  let baseUrl = process.env.BASE_URL;
  let prefix = config.REDIS_PREFIX;
  if (!baseUrl) {
    await migrate(config.DATABASE_URL);
    prefix = ownPrefix = `loadtest-${randomBytes(3).toString('hex')}`;
    const env = { REDIS_PREFIX: prefix, DATABASE_URL: config.DATABASE_URL, ...redisEnvOf(redisTarget), LOG_LEVEL: 'warn' };
    const track = <T extends AppProcess>(started: Promise<T>) => started.then((p) => (processes.push(p), p));
    const [gateway] = await Promise.all([track(spawnGateway({ ...env, LOG_LEVEL: 'info' })), track(spawnWorker({ ...env, LOG_LEVEL: 'info' })), track(spawnWorker({ ...env, LOG_LEVEL: 'info' }))]);
    baseUrl = gateway.url;
    console.log(`system of its own: gateway ${baseUrl}, 2 workers, Redis prefix ${prefix}`);
  }
  if (useK6) {
    const summaryPath = `loadtest/results/${scenario}-k6.json`;
    const k6 = spawnSync('k6', ['run', `loadtest/k6/${scenario}.js`], {
      stdio: 'inherit',
      env: { ...process.env, BASE_URL: baseUrl, ADMIN_TOKEN: config.ADMIN_TOKEN, AUTH_SECRET: config.AUTH_SECRET, SUMMARY_PATH: summaryPath, ...(smoke ? { SMOKE_SECONDS: '2' } : {}) },
    });
    // k6 wrote the Node runner's report, less the invariants it cannot read: they are added here, after
    // the streams have drained.
    const report = JSON.parse(readFileSync(summaryPath, 'utf8')) as { saleIds: number[]; invariants: unknown[]; passed: boolean };
    for (const saleId of report.saleIds) await waitForDrain(redis, prefix, saleId, 60_000);
    const invariants = [];
    for (const saleId of report.saleIds) invariants.push(await checkSaleInvariants(redis, prisma, prefix, saleId));
    console.table(invariants);
    passed = k6.status === 0 && invariantsHold(invariants);
    writeFileSync(summaryPath, `${JSON.stringify({ ...report, invariants, passed }, null, 2)}\n`);
  } else {
    const shape = smoke ? smokeOf(SCENARIOS[scenario], 2) : SCENARIOS[scenario];
    console.log(`${scenario}${smoke ? ' (smoke)' : ''}: ${shape.description}`);
    const report = await runScenario(scenario, shape, { baseUrl, adminToken: config.ADMIN_TOKEN, authSecret: config.AUTH_SECRET, redis, prisma, prefix }, (p) =>
      console.log(`  ${p.elapsedSeconds.toFixed(0).padStart(4)} s  sent ${p.sent}  in flight ${p.inFlight}  dropped ${p.dropped}  ${JSON.stringify(p.outcomes)}`),
    );
    writeFileSync(`loadtest/results/${scenario}-node.json`, `${JSON.stringify(report, null, 2)}\n`);
    printReport(report);
    passed = report.passed;
  }
} finally {
  await Promise.all(processes.map((p) => p.kill('SIGTERM')));
  // Its sales and orders stay in MySQL; what it left in Redis (one Redis, or each master) goes.
  if (ownPrefix) await deleteKeysWithPrefix(redis, ownPrefix);
  await redis.quit();
  await prisma.$disconnect();
}
console.log(passed ? 'PASSED: thresholds met, every invariant holds' : 'FAILED: see above');
process.exit(passed ? 0 : 1);
