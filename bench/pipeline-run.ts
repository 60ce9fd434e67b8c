import type { CommandCost } from './pipeline-servers.ts';

// The records of one round of the pipeline part (bench/pipeline.ts), as the stack that runs it
// (bench/pipeline-stack.ts) measures them.

/** The processes whose CPU the part counts, in the order its tables list them. */
export const PIPELINE_PROCESSES = ['gateway', 'worker-1', 'worker-2', 'reconciler', 'redis-server', 'mariadbd', 'wrk'] as const;
export type PipelineProcess = (typeof PIPELINE_PROCESSES)[number];

export interface PipelineRun {
  loadAverage: number;
  targetRate?: number;
  requests: number;
  accepted: number;
  errors: number;
  loadSeconds: number;
  /** Accepted per second of load (the gateway's side). */
  acceptRate: number;
  p50: number;
  p99: number;
  /** Entries not yet written (lag + pending) when the load stopped, and the seconds until every one was. */
  backlogAtEnd: number;
  drainSeconds: number;
  /** Orders committed / (load + drain seconds). */
  sustainedRate: number;
  /** By process; `pipeline` sums every process but wrk (the system's own cost), `total` adds wrk. */
  cpuUsPerOrder: Record<PipelineProcess, number> & { pipeline: number; total: number };
  redoBytesPerOrder: number;
  binlogBytesPerOrder: number;
  redis: CommandCost[];
}

export interface GatewayAloneRun {
  loadAverage: number;
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerRequest: number;
}
