import { existsSync } from 'node:fs';

/** Where Debian's `faketime` package puts the library (multi-threaded build: Node runs threads). */
const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/faketime/libfaketimeMT.so.1',
];

/**
 * The environment that runs a process with its wall clock `offsetSeconds` off (libfaketime), to prove it
 * never compares its own clock with another process's. Only the wall clock: the monotonic clock (timers,
 * performance.now()) runs true, as it does on a real machine whose clock is merely set wrong.
 */
export function skewedClockEnv(offsetSeconds: number): NodeJS.ProcessEnv {
  const library = LIBFAKETIME.find((path) => existsSync(path));
  if (!library) throw new Error('libfaketime not found: install it (Debian: apt-get install -y faketime)');
  return {
    LD_PRELOAD: library,
    FAKETIME: `${offsetSeconds >= 0 ? '+' : ''}${offsetSeconds}s`,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}
