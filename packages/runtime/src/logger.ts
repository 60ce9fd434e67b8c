import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * One JSON line per event on stdout, tagged with the process role, ready for any log shipper. A command
 * whose stdout is its answer (`npm run admin`) logs to stderr instead (`stream: 2`).
 */
export function createLogger(service: string, level = 'info', { stream = 1 }: { stream?: 1 | 2 } = {}): Logger {
  const options = { name: service, level, base: { service, pid: process.pid } };
  return stream === 2 ? pino(options, pino.destination({ fd: 2, sync: true })) : pino(options);
}
