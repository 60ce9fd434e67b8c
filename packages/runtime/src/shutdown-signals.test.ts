import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A real process per test: onShutdownSignal ends it with process.exit, which no in-process test survives.
// Its stop() takes STOP_TAKES_MS; something else (an interval, as a server would) keeps it running.
const PROGRAM = `
import { createLogger, onShutdownSignal } from '@flashsale/runtime';
const logger = createLogger('shutdown-signals-test', 'info');
setInterval(() => {}, 1000);
onShutdownSignal(logger, Number(process.env.TIMEOUT_MS), () => new Promise((resolve) => setTimeout(resolve, Number(process.env.STOP_TAKES_MS))));
logger.info('ready');
`;
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Stopped {
  code: number | null;
  /** From the first signal to the exit. */
  ms: number;
  messages: unknown[];
  deadlineLine: Record<string, unknown> | undefined;
}

async function signalled(env: { TIMEOUT_MS: string; STOP_TAKES_MS: string }, signals: NodeJS.Signals[]): Promise<Stopped> {
  const child = spawn(process.execPath, ['--conditions=@flashsale/source', '--import', 'tsx', '--input-type=module', '-e', PROGRAM], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, unknown>[] = [];
  let buffered = '';
  let signalledAt = 0;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const complete = buffered.split('\n');
    buffered = complete.pop()!;
    for (const text of complete) {
      const line = JSON.parse(text) as Record<string, unknown>;
      lines.push(line);
      // The first signal once it runs, any further one once it is stopping: two signals sent together
      // may be delivered in either order (the kernel hands pending signals over by number).
      if (line.msg === 'ready') {
        signalledAt = Date.now();
        child.kill(signals[0]);
      } else if (line.msg === 'stopping') {
        for (const signal of signals.slice(1)) child.kill(signal);
      }
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  return {
    code,
    ms: Date.now() - signalledAt,
    messages: lines.map((l) => l.msg),
    deadlineLine: lines.find((l) => l.level === 50),
  };
}

describe('stopping on a signal', () => {
  it('exits 0 once stop() has finished within the deadline', async () => {
    const stopped = await signalled({ TIMEOUT_MS: '5000', STOP_TAKES_MS: '200' }, ['SIGTERM']);

    expect(stopped.code).toBe(0);
    expect(stopped.messages).toEqual(['ready', 'stopping', 'stopped']);
    // Exit code 0 is stop() having finished: the deadline exits 1.
    expect(stopped.ms).toBeGreaterThanOrEqual(200);
  });

  it('exits 1 with an error line at the deadline when stop() has not finished by then', async () => {
    const stopped = await signalled({ TIMEOUT_MS: '500', STOP_TAKES_MS: '60000' }, ['SIGTERM']);

    expect(stopped.code).toBe(1);
    expect(stopped.messages).toEqual(['ready', 'stopping', 'still stopping at the shutdown deadline (SHUTDOWN_TIMEOUT_MS), exiting now']);
    expect(stopped.deadlineLine).toMatchObject({ timeoutMs: 500 });
    // At the deadline, not when stop() ends a minute later (half of that: room for a busy machine).
    expect(stopped.ms).toBeGreaterThanOrEqual(500);
    expect(stopped.ms).toBeLessThan(30_000);
  });

  it('exits 1 at once on a second signal while stopping, deadline or not', async () => {
    const stopped = await signalled({ TIMEOUT_MS: '60000', STOP_TAKES_MS: '60000' }, ['SIGTERM', 'SIGINT']);

    expect(stopped.code).toBe(1);
    expect(stopped.messages).toEqual(['ready', 'stopping', 'second signal while stopping, exiting now']);
    // Neither the deadline nor stop() (a minute each) ended it; half of that leaves room for a busy machine.
    expect(stopped.ms).toBeLessThan(30_000);
  });
});
