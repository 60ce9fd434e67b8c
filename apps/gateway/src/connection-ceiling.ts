import { readFileSync } from 'node:fs';

/** The soft limit assumed where /proc/self/limits cannot be read (not Linux): the usual Linux default. */
const ASSUMED_OPEN_FILE_LIMIT = 1024;
/** What "unlimited" stands for: Linux's default ceiling of any process's open files (fs.nr_open). */
const UNLIMITED_OPEN_FILES = 1_048_576;
/** Descriptors kept for the process itself: Redis and MySQL connections, log and module files, epoll, stdio. */
const OWN_DESCRIPTORS = 128;
const MIN_CEILING = 64;

/**
 * The soft "Max open files" of a /proc/<pid>/limits text; undefined if the text has no such line.
 * The soft limit, not the hard one: it is the one accept() runs into (EMFILE).
 */
export function softOpenFileLimit(limits: string): number | undefined {
  const match = /^Max open files\s+(\d+|unlimited)\s/m.exec(limits);
  if (!match) return undefined;
  return match[1] === 'unlimited' ? UNLIMITED_OPEN_FILES : Number(match[1]);
}

/** This process's soft open-file limit, and whether it was read or assumed. */
export function ownOpenFileLimit(): { limit: number; read: boolean } {
  try {
    const limit = softOpenFileLimit(readFileSync('/proc/self/limits', 'utf8'));
    if (limit !== undefined) return { limit, read: true };
  } catch {
    // No procfs: fall through to the assumption.
  }
  return { limit: ASSUMED_OPEN_FILE_LIMIT, read: false };
}

/**
 * The most connections one process should hold when the operator has not said: below the open-file
 * limit with room for the process's own descriptors, so a flood of connections is refused by the server
 * (new ones closed at once, the process serving on) instead of accept() failing with EMFILE: then every
 * new connection is hung up on, buyers' as much as the flood's, and the process has no descriptor left to
 * reconnect to Redis or MySQL or open a file. `reserved`: descriptors another listener of the process
 * may hold (the metrics port's METRICS_MAX_CONNECTIONS), kept out of this one's share.
 */
export function connectionCeiling(openFileLimit: number, reserved = 0): number {
  return Math.max(MIN_CEILING, Math.floor(openFileLimit * 0.9) - OWN_DESCRIPTORS - reserved);
}
