import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS, mapConcurrently } from '@flashsale/harness';

/**
 * Every command a user runs (`npm run <script> -- --help`) prints its usage and exits 0, and refuses an
 * option it does not know with the usage and exit 2, no stack trace. Each script is run as npm would run
 * it, its tsx line turned into `node --conditions=@flashsale/source --import tsx <entry>` (npm itself left
 * out, which only costs time), several at once. The built roles behind `npm run start:<role>` are checked
 * on the build, in built-processes.test.ts.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPTS = (JSON.parse(readFileSync(new URL('package.json', `file://${ROOT}`), 'utf8')) as { scripts: Record<string, string> })
  .scripts;

/** The scripts a user runs as commands; the rest (build, lint, test, typecheck, prisma:generate, postinstall) are the tools' own. */
const COMMANDS = [
  'gateway',
  'worker',
  'reconciler',
  'db:migrate',
  'services',
  'docs:config',
  'preflight',
  'image:build',
  'image:check',
  'demo',
  'admin',
  'token',
  'chaos',
  'reconcile',
  'bench',
  'bench:reconciler',
  'bench:profile',
  'bench:ab',
  'bench:idle',
  'bench:big-sale',
  'bench:order-ids',
  'loadtest',
  'loadtest:check',
  'soak',
  'start',
];
const TOOLS = new Set(['build', 'lint', 'format', 'test', 'typecheck', 'prisma:generate', 'postinstall']);

/** The node command line npm's script line comes to: tsx lines run from source, `node <file> ...` as is. */
function nodeArgsOf(script: string): string[] {
  const tsx = /^tsx --conditions=@flashsale\/source (\S+)$/.exec(script);
  if (tsx) return [...SOURCE_NODE_ARGS, tsx[1]!];
  const node = /^node (\S+(?: \S+)*)$/.exec(script);
  if (node) return node[1]!.split(' ');
  throw new Error(`a script this test cannot run without npm: ${script}`);
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(script: string, args: string[]): Promise<Run> {
  try {
    // Production settings with no secrets: --help and a refused option must answer before the
    // configuration is read (it would refuse to start without AUTH_SECRET and the rest).
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [...nodeArgsOf(SCRIPTS[script]!), ...args], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'production', AUTH_SECRET: '', ADMIN_TOKEN: '', PAYMENT_WEBHOOK_SECRET: '' },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

const STACK_FRAME = /^\s+at /m;

describe('the commands of package.json', () => {
  it('lists every script as a command or a tool, so a new command cannot miss this test', () => {
    expect(Object.keys(SCRIPTS).filter((name) => !TOOLS.has(name) && !COMMANDS.includes(name) && !name.startsWith('start:'))).toEqual([]);
  });

  it('--help: each prints its usage on stdout and exits 0; an unknown option: the problem and the usage on stderr, exit 2, no stack trace', async () => {
    // Two runs of each command, three at a time: each is a tsx start that loads the command's modules,
    // about 2 s of CPU (2026-11-25), so some 70 s of CPU in all: a minute on two idle cores, and the
    // generous timeout for a busy machine.
    const runs = await mapConcurrently(
      COMMANDS.flatMap((script) => [
        { script, kind: 'help' as const, args: ['--help'] },
        { script, kind: 'unknown' as const, args: ['--no-such-option'] },
      ]),
      3,
      async (job) => ({ ...job, ...(await run(job.script, job.args)) }),
    );

    for (const { script, kind, code, stdout, stderr } of runs) {
      const usageLine = script === 'start' ? 'usage: npm start --' : `usage: npm run ${script === 'token' ? '--silent token' : script}`;
      if (kind === 'help') {
        expect({ script, code, stderr }).toEqual({ script, code: 0, stderr: '' });
        expect(stdout, script).toMatch(new RegExp(`^${usageLine.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      } else {
        expect({ script, code, stdout }).toEqual({ script, code: 2, stdout: '' });
        expect(stderr, script).toMatch(/^(Unknown option '--no-such-option'|unknown role: --no-such-option)\n/);
        expect(stderr, script).toContain(usageLine);
        expect(stderr, script).not.toMatch(STACK_FRAME);
      }
    }
  }, 600_000);

  it('a value a command cannot take is refused with the usage and exit 2, before any service is asked', async () => {
    const runs = await Promise.all([
      run('demo', ['--pace', 'fast']),
      run('admin', ['stock', '--sale', '3', '--add', '0']),
      run('loadtest', ['stampede']),
      run('bench', ['--quick=yes']),
    ]);

    expect(runs.map((r) => r.code)).toEqual([2, 2, 2, 2]);
    expect(runs.map((r) => r.stderr.split('\n')[0])).toEqual([
      '--pace must be a whole number of purchases a second, not fast',
      '--add must be a whole number from 1 to 1000000000, not 0',
      'unknown scenario: stampede',
      "Option '--quick' does not take an argument",
    ]);
    for (const r of runs) expect(r.stderr).not.toMatch(STACK_FRAME);
  });
});
