import { createServer } from 'node:net';

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
