import { AggregatorRegistry, type Registry } from 'prom-client';
import type { MetricsSource } from '@flashsale/runtime';

/**
 * How the supervisor of GATEWAY_WORKERS tells its gateway processes where their metrics are served: the
 * port it bound, or `none`. Set by the supervisor on fork, not by operators.
 */
export const SUPERVISOR_METRICS_PORT = 'FLASHSALE_SUPERVISOR_METRICS_PORT';

/**
 * The supervisor's `/metrics`: at each scrape it asks every gateway process for its metrics over the
 * cluster's IPC channel and serves their sum (gauges of the process itself, such as its start time, by
 * the aggregator each declares). One port for the whole gateway, however many processes share PORT.
 * A scrape fails (500 after prom-client's 5 s) while a process is connected but does not answer, such as
 * one still loading: a partial sum would read as a counter reset.
 */
export function clusterMetricsSource(): MetricsSource {
  const aggregator = new AggregatorRegistry();
  return { contentType: aggregator.contentType, metrics: () => aggregator.clusterMetrics() };
}

/** In a gateway process of the cluster: answers the supervisor's scrapes with `registry`. */
export function answerSupervisorScrapes(registry: Registry): void {
  // prom-client listens for the supervisor's requests only once an AggregatorRegistry exists in the
  // process (its constructor adds the IPC listener), and answers from the global registry unless told:
  // the gateway's metrics live on a registry of their own.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
}

/** The metrics port the supervisor bound, as it told this gateway process. */
export function supervisorMetricsPort(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const value = env[SUPERVISOR_METRICS_PORT];
  return value === undefined || value === 'none' ? undefined : Number(value);
}
