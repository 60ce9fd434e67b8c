import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnGateway, spawnWorker, type AppProcess } from '@flashsale/harness';
import { SCENARIOS, smokeOf } from '../../loadtest/k6/lib/shapes.js';
import { runScenario, type ScenarioTarget } from '../../loadtest/runner/scenario-run.ts';
import { createTestContext, type TestContext } from '../support/context.ts';

/**
 * A short run of every load scenario through the Node runner (what `npm run loadtest` plays where k6 is
 * missing), against real gateway and worker processes, each ending with the invariant check. Keeps the
 * runner, the shapes and the check working; the speed itself is the benchmark's business.
 */
let ctx: TestContext;
let processes: AppProcess[] = [];
let target: ScenarioTarget;
beforeAll(async () => {
  ctx = createTestContext();
  const env = { REDIS_PREFIX: ctx.config.REDIS_PREFIX, DATABASE_URL: ctx.config.DATABASE_URL, REDIS_URL: ctx.config.REDIS_URL };
  const [gateway, worker] = await Promise.all([spawnGateway(env), spawnWorker(env)]);
  processes = [gateway, worker];
  target = { baseUrl: gateway.url, adminToken: ctx.config.ADMIN_TOKEN, authSecret: ctx.config.AUTH_SECRET, redis: ctx.redis, prisma: ctx.prisma, prefix: ctx.config.REDIS_PREFIX };
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

    const report = await runScenario('duplicate-storm', shape, target);

    expect(report.outcomes.accepted).toBe(shape.buyers);
    expect(report.outcomes.duplicate).toBeGreaterThan(0);
    expect(report.outcomes.rate_limited).toBeGreaterThan(0);
    expect(report.outcomes.accepted + report.outcomes.duplicate + report.outcomes.rate_limited).toBe(report.requests);
    expect(report.invariants).toEqual([expect.objectContaining({ ...noBreach, unitsInDb: shape.buyers, remaining: shape.stock - shape.buyers })]);
  });

  it('sustained: spreads purchases over several sales, every one of them balanced', async () => {
    const shape = smokeOf(SCENARIOS.sustained, SMOKE_SECONDS);

    const report = await runScenario('sustained', shape, target);

    expect(report.saleIds).toHaveLength(shape.sales);
    expect(report.outcomes.accepted).toBeGreaterThan(0);
    expect(report.outcomes.accepted + report.outcomes.duplicate).toBe(report.requests);
    expect(report.invariants).toEqual(report.saleIds.map((saleId): unknown => expect.objectContaining({ saleId, ...noBreach, stock: shape.stock })));
    expect(report.invariants.reduce((sum, sale) => sum + sale.unitsInDb, 0)).toBe(report.outcomes.accepted);
  });
});

describe('the k6 scripts', () => {
  it('type-check against @types/k6 (k6 itself cannot run on these machines)', () => {
    const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'loadtest/k6/tsconfig.json'], { encoding: 'utf8' });

    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  });
});
