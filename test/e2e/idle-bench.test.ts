import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '@flashsale/harness';
import type { IdleResult } from '../../bench/idle-measure.ts';
import type { IdleRun } from '../../bench/idle-report.ts';

// `npm run bench:idle` for real at a tiny size: its own redis-server, database and processes, 3 sales,
// a 3-second window, 2 purchases. Only the shape of what it reports is checked, never the figures.

const dir = mkdtempSync(join(tmpdir(), 'flashsale-idle-bench-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function benchIdle(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [...SOURCE_NODE_ARGS, 'bench/idle-sales.ts', ...args], {
      env: process.env,
      timeout: 90_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

describe('npm run bench:idle', () => {
  it('measures a system of 3 idle sales and times 2 purchases to their orders', { timeout: 100_000 }, async () => {
    const out = join(dir, 'results-idle.json');
    const { code, stdout, stderr } = await benchIdle([
      '--sales',
      '3',
      '--seconds',
      '3',
      '--settle',
      '1',
      '--purchases',
      '2',
      '--pause-ms',
      '100',
      '--out',
      out,
    ]);

    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain('| live sales | create (s, per s) | worker CPU % | reconciler CPU % |');
    const { runs } = JSON.parse(readFileSync(out, 'utf8')) as { runs: IdleRun[] };
    expect(runs).toHaveLength(1);
    const run = runs[0]!;
    expect(run).toMatchObject({
      commit: expect.any(String),
      loadAverage: expect.any(Number),
      settings: { seconds: 3, settleSeconds: 1, purchases: 2 },
    });
    expect(run.results).toHaveLength(1);
    const result = run.results[0] as IdleResult;
    expect(result).not.toHaveProperty('error');
    expect(result.sales).toBe(3);
    expect(result.publishedSales).toBe(3);
    expect(result.create.seconds).toBeGreaterThan(0);
    expect(result.window.seconds).toBeGreaterThanOrEqual(3);
    for (const value of [
      ...Object.values(result.cpuPercent),
      result.redis.commandsPerSecond,
      result.window.machineBusyPercent,
      result.window.othersCpuPercent,
      ...Object.values(result.cpuWaitPercent),
    ]) {
      expect(value).toEqual(expect.any(Number));
      expect(value).toBeGreaterThanOrEqual(0);
    }
    // An idle worker still reads its sales' streams: Redis served something.
    expect(result.redis.commandsPerSecond).toBeGreaterThan(0);
    expect(result.toOrder).toMatchObject({ purchases: 2, orders: 2, statuses: { created: 2 } });
    expect(result.toOrder.samplesMs).toHaveLength(2);
    expect(result.toOrder.medianMs).toBeGreaterThanOrEqual(0);
    expect(result.toOrder.maxMs).toBeGreaterThanOrEqual(result.toOrder.medianMs);
  });

  it('exits 2 on a count it cannot read, starting nothing', async () => {
    const { code, stderr } = await benchIdle(['--sales', '10,zero', '--out', join(dir, 'unused.json')]);

    expect(code).toBe(2);
    expect(stderr).toContain('--sales must be a whole number');
  });
});
