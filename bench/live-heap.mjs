// Preloaded into a process by `npm run bench:big-sale -- --live-heap` (node --expose-gc --import): takes
// its live heap (heapUsed right after a full GC) every 500 ms and prints the largest, in MB, on stderr
// at exit as `live-heap-max-mb=<n>`. A plain module: it runs before tsx loads the process's own code.
import { writeSync } from 'node:fs';
import process from 'node:process';
import { setInterval } from 'node:timers';

let max = 0;
const timer = setInterval(() => {
  globalThis.gc();
  max = Math.max(max, process.memoryUsage().heapUsed);
}, 500);
timer.unref();
process.on('exit', () => writeSync(2, `live-heap-max-mb=${Math.round(max / 1048576)}\n`));
