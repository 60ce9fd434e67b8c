import { describe, expect, it } from 'vitest';
import { spawnInGroup } from './process-group.ts';
import { ExitedAtStart, SpawnFailed, startOnFreePort, waitUntilServing, type ProbeResult } from './server-start.ts';

const running = () => spawnInGroup('sleep', ['60'], { stdio: 'ignore' });
const exitedWith = (child: ReturnType<typeof running>) => child.exitCode ?? child.signalCode;

describe('waitUntilServing', () => {
  it('returns once the probe finds the server itself', async () => {
    const child = running();
    let probes = 0;
    await waitUntilServing(child, 'a server', 60_000, async () => ((probes += 1) < 3 ? { kind: 'not-yet' } : { kind: 'ours' }));
    expect(probes).toBe(3);
    child.kill('SIGKILL');
  });

  it('fails at once, killing the child, when another server answers on the port', async () => {
    const child = running();
    const failure = waitUntilServing(child, 'a server', 60_000, async (): Promise<ProbeResult> => ({
      kind: 'another',
      what: 'someone else',
    }));
    await expect(failure).rejects.toThrow(ExitedAtStart);
    await expect(failure).rejects.toThrow('a server: its port is served by another server (someone else)');
    expect(exitedWith(child)).toBe('SIGKILL');
  });

  it('fails at once when the child exits before it answers, with its log, and counts a failing probe as not yet', async () => {
    const child = spawnInGroup('sh', ['-c', 'exit 3'], { stdio: 'ignore' });
    const failure = waitUntilServing(
      child,
      'a server',
      60_000,
      () => Promise.reject(new Error('refused')),
      () => 'the last words',
    );
    await expect(failure).rejects.toThrow(ExitedAtStart);
    await expect(failure).rejects.toThrow('a server exited (3) before it answered; its log ends:\nthe last words');
  });

  it('fails at once, naming the binary and its Debian package, when the binary cannot be started', async () => {
    const child = spawnInGroup('redis-sentinel-not-installed', ['x.conf'], { stdio: 'ignore' });
    const started = Date.now();
    const failure = waitUntilServing(child, 'a sentinel', 60_000, async (): Promise<ProbeResult> => ({ kind: 'not-yet' }));
    await expect(failure).rejects.toThrow(SpawnFailed);
    await expect(failure).rejects.toThrow(
      'a sentinel: redis-sentinel-not-installed could not be started (ENOENT); redis-sentinel-not-installed is not in the suite',
    );
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it('names the package of a listed binary that a PATH lacks', async () => {
    const child = spawnInGroup('wrk', ['--version'], { stdio: 'ignore', env: { PATH: '/nonexistent' } });
    const failure = waitUntilServing(child, 'a load', 60_000, async (): Promise<ProbeResult> => ({ kind: 'not-yet' }));
    await expect(failure).rejects.toThrow(
      "a load: wrk could not be started (ENOENT); it comes with Debian's package wrk (apt-get install -y wrk)",
    );
  });

  it('gives up after its time, killing the child, with a plain error', async () => {
    const child = running();
    const failure = waitUntilServing(child, 'a server', 300, async (): Promise<ProbeResult> => ({ kind: 'not-yet' }));
    await expect(failure).rejects.toThrow('a server did not answer within 300 ms');
    await expect(failure).rejects.not.toThrow(ExitedAtStart);
    expect(exitedWith(child)).toBe('SIGKILL');
  });
});

describe('startOnFreePort', () => {
  it('tries a fresh port when a start exits at once, five times at most, stopping each', async () => {
    const ports: number[] = [];
    let stopped = 0;
    const failure = startOnFreePort((port) => ({
      start: () => {
        ports.push(port);
        return Promise.reject(new ExitedAtStart('exited'));
      },
      stop: async () => void (stopped += 1),
    }));
    await expect(failure).rejects.toThrow('exited');
    expect([ports.length, stopped]).toEqual([5, 5]);
  });

  it('throws any other failure at once', async () => {
    let starts = 0;
    const failure = startOnFreePort(() => ({
      start: () => {
        starts += 1;
        return Promise.reject(new Error('timed out'));
      },
      stop: async () => undefined,
    }));
    await expect(failure).rejects.toThrow('timed out');
    expect(starts).toBe(1);
  });
});
