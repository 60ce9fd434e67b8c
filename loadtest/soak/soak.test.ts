import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS, spawnInGroup } from '@flashsale/harness';
import type { SoakRun } from './sample.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'soak-test-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Runs the soak command (`npm run soak`'s script) with its real processes; resolves with its exit code and output. */
function soak(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawnInGroup(process.execPath, [...SOURCE_NODE_ARGS, 'loadtest/soak/run.ts', ...args, '--out', out], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

describe('npm run soak', () => {
  it('runs the whole system under wrk for a few seconds, samples it, checks the ledger and writes the report', async () => {
    const { code, output } = await soak(['--seconds', '6', '--sample-seconds', '1']);
    expect(code, output).toBe(0);
    expect(output).toMatch(/ledger: .*: PASS/);

    const files = readdirSync(out);
    const base = files.find((f) => f.endsWith('.html'))!.replace(/\.html$/, '');
    expect(base).toMatch(/^soak-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ$/);
    expect(files.sort()).toEqual([`${base}.html`, `${base}.json`, `${base}.svg`]);

    const run = JSON.parse(readFileSync(join(out, `${base}.json`), 'utf8')) as SoakRun & { totals: { accepted: number } };
    expect(run.ledger).toMatchObject({ passed: true, inFlight: 0, deadLettered: 0, auditDrift: 0 });
    expect(run.ledger.ordersInDb).toBeGreaterThan(0);
    expect(run.ledger.ordersInDb).toBe(run.ledger.buyersInRedis);
    expect(run.ledger.unitsInDb).toBe(run.ledger.takenInRedis);
    expect(run.client.ok).toBeGreaterThan(0);
    expect(run.totals.accepted).toBeGreaterThan(0);
    expect(run.samples.length).toBeGreaterThanOrEqual(6);
    // The samples taken while the load ran (those around its end may find wrk gone).
    const during = run.samples.filter((s) => s.t >= 0.5 && s.t < run.loadEndT - 1);
    expect(during.length).toBeGreaterThanOrEqual(3);
    for (const name of ['gateway', 'worker-1', 'worker-2', 'reconciler', 'load generator', 'redis']) {
      const missing = during.filter((s) => !((s.processes[name]?.rssMiB ?? 0) > 0)).map((s) => s.t);
      expect(missing, `samples without ${name}`).toEqual([]);
    }
    expect(during.every((s) => s.stream !== undefined && s.gateway !== undefined && s.unitsWritten !== undefined)).toBe(true);
    expect(run.exits).toEqual({ gateway: 0, 'worker-1': 0, 'worker-2': 0, reconciler: 0 });

    const html = readFileSync(join(out, `${base}.html`), 'utf8');
    expect(html).toContain('Ledger PASS');
    expect(html.match(/<svg /g)).toHaveLength(7);
    expect(html).toContain('data-series="accepted (202)"');
    const svg = readFileSync(join(out, `${base}.svg`), 'utf8');
    expect(svg.match(/<g class="chart"/g)).toHaveLength(7);
    expect(svg).toMatch(/<path class="series" data-series="accepted \(202\)" d="M[\d.]+ [\d.]+L/);
  });
});
