import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * One JSON line per event on stdout, tagged with the process role, ready for any log shipper. A command
 * whose stdout is its answer (`npm run admin`) logs to stderr instead (`stream: 2`).
 *
 * Written synchronously, as Node writes its own stdout to a pipe or a file: pino's default stdout
 * writes through libuv's thread pool, and a process that exited (`process.exit` after its `stopped` or
 * its fatal line) while a line waited there wrote that line after the lines meant to follow it
 * (`logger.test.ts` keeps the pool busy). Normal operation logs no line per request (floods are summed
 * up, `summarised-log.ts`); a line is one `write` system call, on the thread that logs it.
 */
export function createLogger(service: string, level = 'info', { stream = 1 }: { stream?: 1 | 2 } = {}): Logger {
  const options = { name: service, level, base: { service, pid: process.pid } };
  return pino(options, pino.destination({ fd: stream, sync: true }));
}
