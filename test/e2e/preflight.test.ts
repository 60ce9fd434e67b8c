import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '@flashsale/harness';
import { OUTSIDE_TOOLS, whereIs } from '@flashsale/harness/outside-tools';

/**
 * `npm test`'s preflight, run as npm runs it, on a PATH made of links to this machine's own programs:
 * with one of them left out it refuses at once, naming the program, its Debian package and the install
 * command, instead of the minute-long start-up waits of every test that would spawn it.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A PATH holding every listed program this machine has on its own PATH, but those named in `without`. */
function pathWithout(...without: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'flashsale-preflight-'));
  dirs.push(dir);
  for (const { binary } of OUTSIDE_TOOLS) {
    const found = whereIs(binary);
    if (found && !binary.startsWith('/') && !without.includes(binary)) symlinkSync(found, join(dir, basename(binary)));
  }
  return dir;
}

async function preflight(env: NodeJS.ProcessEnv, ...args: string[]) {
  const started = Date.now();
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [...SOURCE_NODE_ARGS, 'infra/preflight.ts', ...args], {
      cwd: ROOT,
      env,
    });
    return { code: 0, stdout, stderr, ms: Date.now() - started };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr, ms: Date.now() - started };
  }
}

describe('npm test preflight', () => {
  it('refuses at once when PATH lacks one of the programs the suite starts, naming it, its package and the install command', async () => {
    const run = await preflight({ PATH: pathWithout('wrk'), CHROMIUM_PATH: process.execPath });
    console.log(`preflight refused in ${run.ms} ms (the spawning tests' start-up wait it replaces: 60000 ms each)`);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      "the test suite starts programs this machine does not have on PATH:\n  wrk (Debian package wrk): the soak's load (loadtest/soak) and the benchmark\n",
    );
    expect(run.stderr).toContain('Install them (as root): apt-get update && apt-get install -y wrk\n');
    expect(run.stderr).not.toContain('redis-server');
    expect(run.ms).toBeLessThan(60_000);
  });

  it('names each missing program once and each package once, Chromium at CHROMIUM_PATH included', async () => {
    const run = await preflight({ PATH: pathWithout('promtool', 'prometheus', 'mariadbd'), CHROMIUM_PATH: '/nonexistent/chromium' });
    expect(run.code).toBe(1);
    expect(run.stderr.match(/^ {2}\S+/gm)).toEqual(['  mariadbd', '  promtool', '  prometheus', '  /nonexistent/chromium']);
    expect(run.stderr).toContain('Install them (as root): apt-get update && apt-get install -y mariadb-server prometheus chromium\n');
  });

  it('asks for k6 only in CI, where no Debian package brings it', async () => {
    const outside = await preflight({ PATH: pathWithout('k6'), CHROMIUM_PATH: process.execPath });
    expect([outside.code, outside.stdout]).toEqual([0, 'preflight: all 15 outside programs the suite starts are on PATH\n']);
    const ci = await preflight({ PATH: pathWithout('k6'), CHROMIUM_PATH: process.execPath, CI: 'true' });
    expect(ci.code).toBe(1);
    expect(ci.stderr).toContain('  k6 (no Debian package: put it on PATH): ');
    expect(ci.stderr).toContain('A program without a Debian package must be put on PATH by hand');
    // No apt-get line names k6 (CI's other tools, podman and the like, may be missing on this machine and
    // have a line of their own).
    expect(ci.stderr.split('\n').filter((line) => line.startsWith('Install them') && /\bk6\b/.test(line))).toEqual([]);
  });
});
