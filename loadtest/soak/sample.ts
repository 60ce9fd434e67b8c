/** The soak's records: one sample, the load generator's summary, the ledger verdict, and the whole run (the raw JSON next to the report). */

/** A process at one instant: resident memory, and CPU used since it started (user + system, its descendants summed). */
export interface ProcessReading {
  rssMiB: number;
  cpuSeconds: number;
}

/** What the sampler saw at one instant. Fields it could not read are absent (null for the stream's lag when Redis cannot count it). */
export interface Sample {
  /** Seconds since the load started (negative never; samples after the load stopped have t > loadSeconds). */
  t: number;
  at: string;
  /** By process name: gateway, worker-1, worker-2, reconciler, load generator, redis, mariadb. */
  processes: Record<string, ProcessReading>;
  redis?: { usedMiB: number; rssMiB: number; saleKeysMiB: number };
  stream?: { length: number; lag: number | null; pending: number; deadLettered: number };
  /** The gateway's purchase counters and latency histogram, cumulative. */
  gateway?: GatewayCounters;
  /** Units of the sale written to MySQL so far (sales.sold_units). */
  unitsWritten?: number;
  /** The pacer's own view of the interval that ended here (--rate only): answers and latency percentiles. */
  client?: { sent: number; answered: number; dropped: number; errors: number; p50Ms: number | null; p99Ms: number | null };
  /** Log lines at warn or above each process wrote in the interval. */
  warnings?: Record<string, number>;
}

/** The load generator's account of the whole run. */
export interface ClientSummary {
  generator: string;
  requests: number;
  /** 2xx answers. */
  ok: number;
  /** Answers outside 2xx. */
  refused: number;
  /** Transport errors and timeouts (wrk's connect, read, write, timeout; the pacer's failed requests). */
  errors: number;
  /** Arrivals the pacer dropped because maxInFlight requests were already waiting (--rate only). */
  dropped: number;
  seconds: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

/** The ledger after the drain, from the admin stats endpoint and Redis, and its verdict. */
export interface LedgerVerdict {
  passed: boolean;
  /** One line per check that failed; empty when passed. */
  failures: string[];
  stock: number;
  remaining: number | null;
  /** stock - remaining: the units the reserve script took. */
  takenInRedis: number | null;
  buyersInRedis: number;
  ordersInDb: number;
  unitsInDb: number;
  inFlight: number;
  deadLettered: number;
  consistent: boolean;
  lostReservations: number;
  auditDrift: number | null;
  auditCheckedAt: string | null;
  /** Whether the audit read ran after the drain (else the last one before it). */
  auditAfterDrain: boolean;
  drainSeconds: number;
}

export interface SoakParameters {
  mode: 'wrk' | 'rate';
  /** How the load was made, as a command line. */
  load: string;
  connections: number;
  rate: number | null;
  loadSeconds: number;
  sampleSeconds: number;
  stock: number;
  saleId: number;
  redisPrefix: string;
  database: string;
  processes: string;
  commit: string;
  machine: string;
  node: string;
  loadAverageAtStart: number;
  startedAt: string;
}

/** Everything a run recorded: what the report is drawn from, and the raw JSON written next to it. */
export interface SoakRun {
  parameters: SoakParameters;
  samples: Sample[];
  /** Seconds from the start of the load to its end (samples after it show the drain). */
  loadEndT: number;
  client: ClientSummary;
  ledger: LedgerVerdict;
  /** Exit code (or signal) of each process after the SIGTERM at the end. */
  exits: Record<string, number | string>;
  /** A few of the warn-or-above log lines of each process, for the report. */
  logExcerpts: Record<string, string[]>;
  /** Things the runner noticed that do not fail the ledger (the feed ending early, a sample that failed). */
  notes: string[];
}

/** What the soak reads from the gateway's `/metrics`: cumulative since the gateway started. */
export interface GatewayCounters {
  /** flashsale_purchases_total by outcome (`reserved`, or the refusal's code). */
  outcomes: Record<string, number>;
  /** flashsale_purchase_duration_seconds: upper bounds in seconds (the last one +Inf) and cumulative counts. */
  latency: { bounds: number[]; counts: number[] };
}
