import type { ScenarioReport } from './scenario-run.ts';

/** The end-of-run report on the console. */
export function printReport(report: ScenarioReport): void {
  console.table({
    requests: { value: report.requests },
    'throughput (req/s)': { value: Math.round(report.throughput) },
    'dropped arrivals': { value: report.dropped },
    ...Object.fromEntries(Object.entries(report.outcomes).map(([outcome, count]) => [outcome, { value: count }])),
    'latency p50 (ms)': { value: report.latencyMs.p50.toFixed(1) },
    'latency p90 (ms)': { value: report.latencyMs.p90.toFixed(1) },
    'latency p99 (ms)': { value: report.latencyMs.p99.toFixed(1) },
    'latency max (ms)': { value: report.latencyMs.max.toFixed(1) },
  });
  console.table(report.invariants);
}
