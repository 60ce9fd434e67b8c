import { pino, type Logger } from 'pino';

export type { Logger };

/** One JSON line per event on stdout, tagged with the process role, ready for any log shipper. */
export function createLogger(service: string, level = 'info'): Logger {
  return pino({ name: service, level, base: { service, pid: process.pid } });
}
