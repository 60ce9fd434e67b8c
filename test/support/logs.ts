import { pino } from 'pino';
import type { Logger } from '@flashsale/runtime';

/** One line a logger wrote, parsed (pino's fields: `level` 30 info, 40 warn, 50 error; `msg`; the rest). */
export type LogLine = Record<string, unknown> & { level: number; msg: string };

/** A logger at info level whose lines are kept, parsed, in `lines`, for a test to read. */
export function capturedLog(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) }) };
}
