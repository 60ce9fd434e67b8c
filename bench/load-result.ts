// What a load generator is asked to play and what it answers, apart from the generators themselves
// (bench/wrk-load.ts, bench/autocannon-load.ts) and from the choice between them (bench/load.ts).

/** One closed-loop load run against one server. */
export interface LoadResult {
  /** Answers received within the run. */
  requests: number;
  rps: number;
  /** Latency percentiles in ms. */
  p50: number;
  p99: number;
  /** Answers with a 2xx status, and the rest (refusals: 4xx, 5xx). */
  ok: number;
  refused: number;
  /** Requests without an answer: connection errors and timeouts. */
  errors: number;
  /** Answers by status, where the load generator counts them (autocannon; wrk counts only 2xx and the rest). */
  statuses?: Record<string, number>;
}

export interface PurchaseLoadOptions {
  url: string;
  saleId: number;
  /** The buyers (id and token), each request the next one, round robin. */
  buyers: { id: string; token: string }[];
  /** Cycle through the first `cycle` buyers only (the duplicate path), default all of them. */
  cycle?: number;
  connections: number;
  seconds: number;
}
