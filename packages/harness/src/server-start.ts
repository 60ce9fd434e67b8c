import type { ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { killChild } from './child-process.ts';
import { installHint } from './outside-tools.ts';

/** A free TCP port on loopback, as the kernel hands it out. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A server that exited before it answered: nothing listens, and waiting longer cannot help. */
export class ExitedAtStart extends Error {}

/** A server whose binary could not be started at all (not on PATH, not executable): no port can help either. */
export class SpawnFailed extends Error {}

/** First starts on a fresh port, when the server exits at once. */
const FIRST_START_ATTEMPTS = 5;

/**
 * Makes a server on a free port (`make`) and starts it; when it exits at start (ExitedAtStart), stops it
 * and tries a fresh port, five times at most. freePort's port is only free when asked: another process
 * (another test file's server) may take it, or a port the server derives from it (a cluster node's bus
 * port, port + 10000), before the server binds it, and the server then exits at once. A new port, not a
 * longer wait. Any other failure is thrown as it is.
 */
export async function startOnFreePort<S extends { start(): Promise<void>; stop(): Promise<void> }>(make: (port: number) => S): Promise<S> {
  for (let attempt = 1; ; attempt++) {
    const server = make(await freePort());
    try {
      await server.start();
      return server;
    } catch (error) {
      await server.stop();
      if (!(error instanceof ExitedAtStart) || attempt >= FIRST_START_ATTEMPTS) throw error;
    }
  }
}

/** What a probe of a starting server found: not answering yet, this very server, or another one (described). */
export type ProbeResult = { kind: 'not-yet' } | { kind: 'ours' } | { kind: 'another'; what: string };

/** What `stream` (a server's log) has said last, its last `chars` characters: what a failed start shows. */
export function logTail(stream: Readable, chars: number): () => string {
  let log = '';
  stream.setEncoding('utf8').on('data', (chunk: string) => {
    log = (log + chunk).slice(-chars);
  });
  return () => log;
}

/**
 * Polls `probe` until the server `child` runs answers as itself. Fails at once, with ExitedAtStart, when
 * the child exits first or another server answers on its port (took it after this one exited on it);
 * after `timeoutMs` with a plain Error. Either way the child is killed. `log` adds what the server said.
 */
export async function waitUntilServing(
  child: ChildProcess,
  name: string,
  timeoutMs: number,
  probe: () => Promise<ProbeResult>,
  log: () => string = () => '',
): Promise<void> {
  let exited: number | string | null | undefined = child.exitCode ?? child.signalCode ?? undefined;
  child.once('exit', (code, signal) => {
    exited = code ?? signal;
  });
  // A spawn that fails (ENOENT, EACCES) emits 'error' and never 'exit': without this the wait would run
  // out its whole time on a binary that was never there.
  let spawnError: (Error & { code?: string; path?: string }) | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });
  const tail = () => (log() ? `; its log ends:\n${log()}` : '');
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (spawnError) {
      const binary = child.spawnfile;
      throw new SpawnFailed(`${name}: ${binary} could not be started (${spawnError.code ?? spawnError.message}); ${installHint(binary)}`);
    }
    if (exited !== undefined) throw new ExitedAtStart(`${name} exited (${exited}) before it answered${tail()}`);
    const found = await probe().catch((): ProbeResult => ({ kind: 'not-yet' }));
    if (found.kind === 'ours') return;
    if (found.kind === 'another') {
      await killChild(child, 'SIGKILL');
      throw new ExitedAtStart(`${name}: its port is served by another server (${found.what})`);
    }
    await sleep(50);
  }
  await killChild(child, 'SIGKILL');
  throw new Error(`${name} did not answer within ${timeoutMs} ms${tail()}`);
}
