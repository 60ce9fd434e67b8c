import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS, spawnGateway, spawnWorker, type AppProcess } from '@flashsale/harness';
import { poolConfigFromUrl } from '@flashsale/order-store';
import { SCENARIOS, smokeOf } from '../../loadtest/k6/lib/shapes.js';
import { runScenario, type ScenarioReport, type ScenarioTarget } from '../../loadtest/runner/scenario-run.ts';
import { checkSaleInvariants, invariantsHold } from '../../loadtest/runner/invariants.ts';
import { createTestContext, type TestContext } from '../support/context.ts';
import { runProcess } from '../support/run-process.ts';

/**
 * A short run of every load scenario through the Node runner (what `npm run loadtest` plays where k6 is
 * missing), against real gateway and worker processes, each ending with the invariant check. Keeps the
 * runner, the shapes and the check working; the speed itself is the benchmark's business.
 */
let ctx: TestContext;
let processes: AppProcess[] = [];
let target: ScenarioTarget;
let processEnv: NodeJS.ProcessEnv;
beforeAll(async () => {
  ctx = createTestContext();
  processEnv = { REDIS_PREFIX: ctx.config.REDIS_PREFIX, DATABASE_URL: ctx.config.DATABASE_URL, REDIS_URL: ctx.config.REDIS_URL };
  // All the load comes from this one address, as `npm run loadtest` sets its own gateway up.
  const [gateway, worker] = await Promise.all([
    spawnGateway({ ...processEnv, RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0', MAX_CONNECTIONS_PER_ADDRESS: '0' }),
    spawnWorker(processEnv),
  ]);
  processes = [gateway, worker];
  target = {
    baseUrl: gateway.url,
    adminToken: ctx.config.ADMIN_TOKEN,
    authSecret: ctx.config.AUTH_SECRET,
    store: ctx.store,
    prisma: ctx.prisma,
  };
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill('SIGTERM')));
  await ctx.close();
});

const SMOKE_SECONDS = 1.5;
const noBreach = { lost: 0, duplicated: 0, unexpected: 0, oversold: 0, balanced: true };

describe('load scenarios, smoke runs through the Node runner', () => {
  it('flash-crowd: sells exactly the stock to the crowd, refuses the rest as sold out, loses nothing', async () => {
    const shape = smokeOf(SCENARIOS['flash-crowd'], SMOKE_SECONDS);

    const report = await runScenario('flash-crowd', shape, target);

    expect(report.requests).toBeGreaterThan(shape.stock);
    expect(report.outcomes.accepted).toBe(shape.stock);
    expect(report.outcomes.sold_out).toBe(report.requests - shape.stock);
    expect(report.outcomes.error).toBe(0);
    expect(report.invariants).toEqual([expect.objectContaining({ ...noBreach, unitsInDb: shape.stock, remaining: 0 })]);
  });

  it('duplicate-storm: each of the few buyers gets exactly one reservation; retries are refused as duplicates or rate-limited', async () => {
    const shape = smokeOf(SCENARIOS['duplicate-storm'], SMOKE_SECONDS);
    // A gateway of its own that lets a buyer one purchase a second: a buyer's retries within a second
    // are rate-limited and the later ones refused as duplicates, however fast a busy machine sends them.
    const strict = await spawnGateway({ ...processEnv, RATE_LIMIT_PER_SECOND: '1' });
    processes.push(strict);

    const report = await runScenario('duplicate-storm', shape, { ...target, baseUrl: strict.url });

    expect(report.outcomes.accepted).toBe(shape.buyers);
    expect(report.outcomes.duplicate).toBeGreaterThan(0);
    expect(report.outcomes.rate_limited).toBeGreaterThan(0);
    expect(report.outcomes.accepted + report.outcomes.duplicate + report.outcomes.rate_limited).toBe(report.requests);
    expect(report.invariants).toEqual([
      expect.objectContaining({ ...noBreach, unitsInDb: shape.buyers, remaining: shape.stock - shape.buyers }),
    ]);
  });

  it('sustained: spreads purchases over several sales, every one of them balanced', async () => {
    const shape = smokeOf(SCENARIOS.sustained, SMOKE_SECONDS);

    const report = await runScenario('sustained', shape, target);

    expect(report.saleIds).toHaveLength(shape.sales);
    expect(report.outcomes.accepted).toBeGreaterThan(0);
    expect(report.outcomes.accepted + report.outcomes.duplicate).toBe(report.requests);
    expect(report.invariants).toEqual(
      report.saleIds.map((saleId): unknown => expect.objectContaining({ saleId, ...noBreach, stock: shape.stock })),
    );
    expect(report.invariants.reduce((sum, sale) => sum + sale.unitsInDb, 0)).toBe(report.outcomes.accepted);
  });
});

describe('the k6 scripts', () => {
  it('type-check against @types/k6', () => {
    const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'loadtest/k6/tsconfig.json'], { encoding: 'utf8' });

    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  });
});

/** Whether a k6 binary is on PATH. In CI (CI=true) it must be: a missing k6 fails there instead of skipping. */
const k6OnPath = spawnSync('k6', ['version'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!k6OnPath && process.env.CI !== 'true')('load scenarios, smoke runs through the real k6', () => {
  /** `k6 run loadtest/k6/<scenario>.js` with the smoke shape against the gateway; returns its report (the Node runner's format). */
  async function k6Smoke(scenario: 'flash-crowd' | 'duplicate-storm' | 'sustained') {
    expect(k6OnPath, 'k6 must be on PATH in CI').toBe(true);
    const summaryPath = join(mkdtempSync(join(tmpdir(), 'k6-')), `${scenario}.json`);
    const k6 = spawnSync('k6', ['run', '--quiet', '--no-color', `loadtest/k6/${scenario}.js`], {
      encoding: 'utf8',
      env: {
        ...process.env,
        BASE_URL: target.baseUrl,
        ADMIN_TOKEN: ctx.config.ADMIN_TOKEN,
        AUTH_SECRET: ctx.config.AUTH_SECRET,
        SMOKE_SECONDS: String(SMOKE_SECONDS),
        SUMMARY_PATH: summaryPath,
      },
    });
    expect(k6.status, k6.stdout + k6.stderr).toBe(0);
    const report = JSON.parse(readFileSync(summaryPath, 'utf8')) as ScenarioReport;
    for (const saleId of report.saleIds) await ctx.store.sale(saleId).waitForDrain();
    const invariants = [];
    for (const saleId of report.saleIds) invariants.push(await checkSaleInvariants(ctx.store, ctx.prisma, saleId));
    return { report, invariants };
  }

  it('flash-crowd: k6 sells exactly the stock, refuses the rest as sold out, with no error, and the ledger holds', async () => {
    const shape = smokeOf(SCENARIOS['flash-crowd'], SMOKE_SECONDS);

    const { report, invariants } = await k6Smoke('flash-crowd');

    expect(report).toMatchObject({ scenario: 'flash-crowd', runner: 'k6', passed: true, shape });
    expect(report.outcomes.accepted).toBe(shape.stock);
    expect(report.outcomes.sold_out).toBe(report.requests - shape.stock);
    expect(report.outcomes.error).toBe(0);
    expect(report.statuses['202']).toBe(shape.stock);
    expect(invariants).toEqual([expect.objectContaining({ ...noBreach, unitsInDb: shape.stock, remaining: 0 })]);
  });

  it('duplicate-storm: k6 gets each buyer exactly one reservation, the retries refused', async () => {
    const shape = smokeOf(SCENARIOS['duplicate-storm'], SMOKE_SECONDS);

    const { report, invariants } = await k6Smoke('duplicate-storm');

    expect(report.outcomes.accepted).toBe(shape.buyers);
    expect(report.outcomes.accepted + report.outcomes.duplicate + report.outcomes.rate_limited).toBe(report.requests);
    expect(invariants).toEqual([expect.objectContaining({ ...noBreach, unitsInDb: shape.buyers, remaining: shape.stock - shape.buyers })]);
  });

  it('sustained: k6 spreads purchases over several sales, each balanced', async () => {
    const shape = smokeOf(SCENARIOS.sustained, SMOKE_SECONDS);

    const { report, invariants } = await k6Smoke('sustained');

    expect(report.saleIds).toHaveLength(shape.sales);
    expect(report.outcomes.accepted).toBeGreaterThan(0);
    expect(report.outcomes.error).toBe(0);
    expect(invariants.map((check) => check.saleId)).toEqual(report.saleIds);
    expect(invariantsHold(invariants)).toBe(true);
    expect(invariants.reduce((sum, check) => sum + check.unitsInDb, 0)).toBe(report.outcomes.accepted);
  });
});

describe('npm run loadtest on a system of its own', () => {
  /** The runners to check: the Node runner always; k6 where it is on PATH (in CI it must be). */
  const runners = k6OnPath || process.env.CI === 'true' ? (['node', 'k6'] as const) : (['node'] as const);

  it.each(runners)(
    '%s: runs on a database and a Redis prefix of its own, and removes both afterwards',
    async (runner) => {
      const out = mkdtempSync(join(tmpdir(), 'loadtest-'));
      const run = await runProcess(
        process.execPath,
        [...SOURCE_NODE_ARGS, 'loadtest/run.ts', 'flash-crowd', '--smoke', '--out', out, ...(runner === 'node' ? ['--node'] : [])],
        {
          BASE_URL: '',
          LOG_LEVEL: 'warn',
        },
      );

      expect(run.code, run.stdout + run.stderr).toBe(0);
      const base = poolConfigFromUrl(ctx.config.DATABASE_URL).database;
      const own = /database (\S+), Redis prefix (loadtest-[0-9a-f]+)/.exec(run.stdout);
      expect(own, run.stdout).not.toBeNull();
      const [, database, prefix] = own!;
      expect(database).toMatch(new RegExp(`^${base}_loadtest_[0-9a-f]+$`));
      expect(run.stdout).toContain(`removed the run's database ${database} and its Redis keys under ${prefix}`);
      expect(run.stdout).toContain('PASSED');
      const report = JSON.parse(readFileSync(join(out, `flash-crowd-${runner}.json`), 'utf8')) as ScenarioReport;
      expect(report.invariants).toEqual([expect.objectContaining(noBreach)]);

      // Nothing left: not its database (its sales and orders were there, none in the one it was pointed at), not a key.
      const schemas = await ctx.prisma.$queryRawUnsafe<{ name: string }[]>(
        'SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?',
        database,
      );
      expect(schemas).toEqual([]);
      expect(await ctx.redis.scan('0', 'MATCH', `${prefix}:*`, 'COUNT', 10_000)).toEqual(['0', []]);
    },
    300_000,
  );
});
