import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { UsageError } from '@flashsale/config';
import { SOURCE_NODE_ARGS } from '@flashsale/harness';
import { BENCH_PARTS, benchSettingsOf, type BenchSettings } from '../../bench/options.ts';
import { runProcess } from '../support/run-process.ts';

const settings = (args: string[], env: NodeJS.ProcessEnv = {}) => benchSettingsOf(args, env) as BenchSettings;

describe('npm run bench: its settings', () => {
  it('runs every part by default, the full length, and records nothing', () => {
    expect(settings([])).toMatchObject({
      seconds: 5,
      rounds: 3,
      drainRows: 20_000,
      drainRounds: 5,
      scriptSeconds: 2,
      scriptCalls: 2_000,
      reconcilerSeconds: 40,
      pipelineSeconds: 10,
      quick: false,
      record: false,
    });
    expect([...settings([]).parts]).toEqual([...BENCH_PARTS]);
    expect(BENCH_PARTS).toEqual([
      'purchase',
      'scaling',
      'fsync',
      'drain',
      'expiry',
      'script',
      'cluster',
      'workers',
      'reconciler',
      'pipeline',
      'replica-wait',
      'door',
      'door-bots',
      'neighbours',
      'galera',
      'ready',
    ]);
  });

  it('--quick: every part, shorter and once; a BENCH_ variable still wins', () => {
    expect(settings(['--quick'])).toMatchObject({
      seconds: 2,
      rounds: 1,
      drainRows: 5_000,
      drainRounds: 1,
      scriptSeconds: 1,
      scriptCalls: 500,
      reconcilerSeconds: 10,
      pipelineSeconds: 3,
      quick: true,
    });
    expect([...settings(['--quick']).parts]).toEqual([...BENCH_PARTS]);
    expect(settings(['--quick'], { BENCH_SECONDS: '3' }).seconds).toBe(3);
  });

  it('--record asks for the results to be written; --help for the usage', () => {
    expect(settings(['--record']).record).toBe(true);
    expect(benchSettingsOf(['--help'], {})).toBe('help');
  });

  it('runs only the parts BENCH_PARTS names: the replica-wait, door and neighbours parts as any other', () => {
    expect([...settings([], { BENCH_PARTS: 'replica-wait, door,neighbours' }).parts]).toEqual(['replica-wait', 'door', 'neighbours']);
    expect([...settings(['--quick'], { BENCH_PARTS: 'door' }).parts]).toEqual(['door']);
    expect(() => benchSettingsOf([], { BENCH_PARTS: 'replica_wait' })).toThrow(/^BENCH_PARTS: no part replica_wait \(the parts: /);
  });

  it('refuses a part that does not exist, a variable that is not a number and an unknown option', () => {
    expect(() => benchSettingsOf([], { BENCH_PARTS: 'purchase,expirey' })).toThrow(
      new UsageError(
        'BENCH_PARTS: no part expirey (the parts: purchase, scaling, fsync, drain, expiry, script, cluster, workers, reconciler, pipeline, replica-wait, door, door-bots, neighbours, galera, ready)',
      ),
    );
    expect(() => benchSettingsOf([], { BENCH_ROUNDS: 'three' })).toThrow(
      new UsageError('BENCH_ROUNDS must be a number above 0, not "three"'),
    );
    expect(() => benchSettingsOf(['--fast'], {})).toThrow(UsageError);
  });
});

describe('npm run bench without --record', () => {
  const digest = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

  it('prints the results and leaves bench/results.json and docs/BENCHMARKS.md as they were', async () => {
    const before = { results: digest('bench/results.json'), doc: digest('docs/BENCHMARKS.md') };

    // One small part (the drain of 500 reservations, once): the bench's whole path from settings to report.
    const run = await runProcess(process.execPath, [...SOURCE_NODE_ARGS, 'bench/run.ts'], {
      BENCH_PARTS: 'drain',
      BENCH_DRAIN_ROWS: '500',
      BENCH_DRAIN_ROUNDS: '1',
    });

    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /Drain of 500 reservations \(medians of 1 alternated runs\): one worker [\d.]+ s, raw multi-row INSERTs [\d.]+ s/,
    );
    expect(run.stdout).toContain(
      'not recorded: bench/results.json and docs/BENCHMARKS.md are unchanged (--record to append and rewrite them)',
    );
    expect({ results: digest('bench/results.json'), doc: digest('docs/BENCHMARKS.md') }).toEqual(before);
  });
});
