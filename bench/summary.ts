// The shapes every bench part reports in, apart from the report that gathers the parts (bench/report.ts):
// a part imports these, never the report.

export type PathName = 'accept' | 'duplicate' | 'sold_out';

export interface Summary {
  /** Medians of the runs. */
  rps: number;
  p50: number;
  p99: number;
  /** CPU time (user + system) of the server process per request answered, in microseconds. */
  cpuUsPerRequest?: number;
  runs: unknown[];
}

/** Medians of reserve-script runs (bench/reserve-load.ts), and every run. */
export interface ReserveSummary {
  callsPerSecond: number;
  clientCpuUs: number;
  redisScriptUs: number;
  redisCpuUs: number;
  runs: unknown[];
}

/** What every part's section opens with (runLine): when, which command, on which code and machine. */
export interface RunInfo {
  date: string;
  machine: string;
  node: string;
  command: string;
  /** HEAD when the bench ran, `+changes` when the working tree differed from it. */
  commit: string;
  loadGenerator: string;
  settings: Record<string, number>;
}
