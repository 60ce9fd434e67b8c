/**
 * Loaded into a process the profile measures (`node --import ./bench/gc-watch.mjs`, NODE_OPTIONS for the
 * gateway): counts its garbage collections by kind with a PerformanceObserver, and on SIGUSR2 appends the
 * totals so far to BENCH_GC_FILE as one JSON line. `npm run bench:profile` asks before and after the load
 * and prints the difference: the collector's pauses, which a sampled CPU profile of the main thread
 * shows only in part (what the young generation promotes is paid for later, by the old generation's).
 */
import { appendFileSync } from 'node:fs';
import { PerformanceObserver, constants } from 'node:perf_hooks';

const file = process.env.BENCH_GC_FILE;
if (file) {
  const kinds = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  const totals = { minor: { count: 0, ms: 0 }, major: { count: 0, ms: 0 }, incremental: { count: 0, ms: 0 }, weakcb: { count: 0, ms: 0 } };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const total = totals[kinds[entry.detail?.kind]];
      if (!total) continue;
      total.count += 1;
      total.ms += entry.duration;
    }
  }).observe({ entryTypes: ['gc'] });
  process.on('SIGUSR2', () => appendFileSync(file, `${JSON.stringify({ totals, heapUsed: process.memoryUsage().heapUsed })}\n`));
}
