import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './logger.ts';

/**
 * What `/metrics` answers: a prom-client Registry, or anything that renders one, such as the sum of a
 * node:cluster's processes gathered by an AggregatorRegistry.
 */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

/** What `/readyz` asks, by name (`redis`, `mysql`): each check resolves once its store has answered. */
export type ReadinessChecks = Record<string, () => Promise<unknown>>;

/** The body of `/readyz`, answered with 200 when `ready`, 503 otherwise. */
export interface Readiness {
  status: 'ready' | 'not_ready';
  checks: Record<string, 'up' | 'down'>;
}

/** How long `/readyz` waits for a store before calling it down. */
const READY_TIMEOUT_MS = 1000;

/**
 * Asks every check, each given `timeoutMs` to answer. Cheap however often it is polled: a check still
 * running is not started again but awaited by the next probes too, so a store that is away costs one
 * command waiting for it (ioredis queues commands until it reconnects), not one more per probe.
 */
export function readinessProbe(checks: ReadinessChecks, timeoutMs = READY_TIMEOUT_MS): () => Promise<Readiness> {
  const running = new Map<string, Promise<boolean>>();
  const answered = (name: string, check: () => Promise<unknown>): Promise<boolean> => {
    let answer = running.get(name);
    if (answer === undefined) {
      answer = Promise.resolve()
        .then(check)
        .then(
          () => true,
          () => false,
        )
        .finally(() => running.delete(name));
      running.set(name, answer);
    }
    return answer;
  };
  return async () => {
    const results = await Promise.all(
      Object.entries(checks).map(async ([name, check]) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
        const up = await Promise.race([answered(name, check), late]);
        clearTimeout(timer);
        return [name, up ? 'up' : 'down'] as const;
      }),
    );
    return { status: results.every(([, state]) => state === 'up') ? 'ready' : 'not_ready', checks: Object.fromEntries(results) };
  };
}

/**
 * The small internal HTTP server of a process (worker, reconciler, the gateway's METRICS_PORT):
 * `/metrics` in Prometheus text format, `/healthz` (200 while the process runs) and, when `readiness` is
 * given, `/readyz` (200 when every store answers, 503 otherwise); on `port` (0 picks a free one; read
 * it from the `listening` event). It answers whatever the stores do, so a process listens on it at
 * once, before Redis or MySQL have answered.
 */
export function serveMetrics(registry: MetricsSource, port: number, readiness?: () => Promise<Readiness>): Server {
  return createServer((req, res) => {
    if (req.url === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    } else if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else if (req.url === '/readyz' && readiness) {
      void readiness().then((report) => res.writeHead(report.status === 'ready' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(report)));
    } else {
      res.writeHead(404).end();
    }
  }).listen(port);
}

/** The process serving a metrics port, as the line logged when the port cannot be bound names it. */
export interface MetricsPortOwner {
  logger: Logger;
  /** `gateway`, `worker`, `reconciler`. */
  role: string;
  /** The variable that sets the port, for the operator to change: `WORKER_PORT`. */
  variable: string;
  /** What `/readyz` asks (see serveMetrics); none: no `/readyz` on this port. */
  readiness?: () => Promise<Readiness>;
}

/**
 * serveMetrics, resolved once it listens, with the port bound; or, when the port cannot be bound (a
 * second process of the role on the host with the default), with none, and that logged: the process goes
 * on without /metrics, as serving buyers, writing orders or reconciling matters more than being scraped.
 */
export async function serveMetricsPort(
  source: MetricsSource,
  port: number,
  { logger, role, variable, readiness }: MetricsPortOwner,
): Promise<{ server: Server; port: number | undefined }> {
  const server = serveMetrics(source, port, readiness);
  const bound = await new Promise<number | undefined>((resolve) => {
    server.once('listening', () => resolve((server.address() as AddressInfo).port));
    server.once('error', (err) => {
      logger.error({ err, port }, `metrics port unavailable: this ${role} serves no /metrics (give it its own ${variable})`);
      resolve(undefined);
    });
  });
  return { server, port: bound };
}
