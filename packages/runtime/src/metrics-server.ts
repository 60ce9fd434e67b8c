import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '@flashsale/config';
import { capConnections, type ConnectionRefusal } from './connection-cap.ts';
import type { Logger } from './logger.ts';
import { summarisedLog } from './summarised-log.ts';

/**
 * What `/metrics` answers: a prom-client Registry, or anything that renders one, such as the sum of a
 * node:cluster's processes gathered by an AggregatorRegistry.
 */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

/** Renders of `/metrics` a process makes in a second at most; past them a scrape gets the second's latest. */
export const METRICS_RENDERS_PER_SECOND = 30;

/**
 * `source.metrics()` at most `perSecond` times a second: a scrape past them is answered with the latest
 * text rendered in the same second. A render of the gateway's registry costs about 0.9 ms of its event
 * loop: wrk scraping 1,250 times a second took 0.61 of the buyers' rate in the neighbours bench. Rationed,
 * a flood costs the renders of the budget and the writes, and its text is never more than a second old; a
 * Prometheus (every 15 s or so) or a test polling every 50 ms never meets the ration. A render that fails
 * is not kept: the next scrape renders again.
 */
export function rationedRenders(
  source: MetricsSource,
  perSecond = METRICS_RENDERS_PER_SECOND,
  now: () => number = () => performance.now(),
): () => Promise<string> {
  let second = Number.NaN;
  let rendered = 0;
  // The latest text rendered in the current second (none yet: undefined).
  let latest: string | undefined;
  // The last render while it runs: past the ration, a scrape with no text of this second yet shares it.
  let running: Promise<string> | undefined;
  return () => {
    const current = Math.floor(now() / 1000);
    if (current !== second) {
      second = current;
      rendered = 0;
      latest = undefined;
    }
    if (rendered >= perSecond) {
      if (latest !== undefined) return Promise.resolve(latest);
      if (running !== undefined) return running;
    }
    rendered += 1;
    const render = source.metrics().then((text) => {
      // A render that started in an earlier second is not this second's latest.
      if (current === second) latest = text;
      return text;
    });
    running = render;
    const settled = () => {
      if (running === render) running = undefined;
    };
    render.then(settled, settled);
    return render;
  };
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

/** How one internal port listens and whom it lets in (see serveMetrics); each has a default. */
export interface MetricsListener {
  /** Address to listen on, default 127.0.0.1 (METRICS_HOST). */
  host?: string;
  /** Bearer token /metrics requires (METRICS_TOKEN); none: /metrics is open to whoever reaches the port. */
  token?: string;
  /** Connections held at once, default 32 (METRICS_MAX_CONNECTIONS); one address at most a quarter of them. */
  maxConnections?: number;
  /** Time to send the headers / the whole request / idle keep-alive, default 5 s / 10 s / 5 s (the HTTP_*_TIMEOUT_MS of PORT). */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  /** Renders of /metrics a second at most, default METRICS_RENDERS_PER_SECOND (rationedRenders). */
  rendersPerSecond?: number;
  /** Told of each connection closed at once for a cap (the caller logs a summary). */
  onRefused?: (reason: ConnectionRefusal, address?: string) => void;
}

/**
 * The small internal HTTP server of a process (worker, reconciler, the gateway's METRICS_PORT):
 * `/metrics` in Prometheus text format, `/healthz` (200 while the process runs) and, when `readiness` is
 * given, `/readyz` (200 when every store answers, 503 otherwise); on `port` (0 picks a free one; read
 * it from the `listening` event). It answers whatever the stores do, so a process listens on it at
 * once, before Redis or MySQL have answered.
 *
 * Guarded like the buyers' port, since it is a door into the same process: it listens on loopback
 * unless told otherwise, holds a bounded number of connections (past it a new one is closed at once,
 * so a flood here costs the process a fixed number of descriptors, which the gateway keeps out of
 * PORT's share), ends a connection that does not send its request in time, renders /metrics at most
 * METRICS_RENDERS_PER_SECOND times a second (rationedRenders), and, with a token, serves /metrics (each
 * sale's stock and remaining, in the reconciler's) to the scraper only.
 */
export function serveMetrics(
  registry: MetricsSource,
  port: number,
  readiness?: () => Promise<Readiness>,
  listener: MetricsListener = {},
): Server {
  const headersTimeoutMs = listener.headersTimeoutMs ?? 5000;
  const maxConnections = listener.maxConnections ?? 32;
  const expected = listener.token === undefined ? undefined : Buffer.from(`Bearer ${listener.token}`);
  const render = rationedRenders(registry, listener.rendersPerSecond);
  const server = createServer(
    {
      headersTimeout: headersTimeoutMs,
      requestTimeout: listener.requestTimeoutMs ?? 10_000,
      keepAliveTimeout: listener.keepAliveTimeoutMs ?? 5000,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(headersTimeoutMs / 4)),
    },
    (req, res) => {
      if (req.url === '/metrics') {
        if (expected && !sameBytes(req.headers.authorization, expected)) {
          res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
          return;
        }
        render().then(
          (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
          () => res.writeHead(500).end(),
        );
      } else if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      } else if (req.url === '/readyz' && readiness) {
        void readiness().then((report) =>
          res.writeHead(report.status === 'ready' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(report)),
        );
      } else {
        res.writeHead(404).end();
      }
    },
  );
  capConnections(server, maxConnections, Math.max(1, Math.floor(maxConnections / 4)), listener.onRefused ?? (() => undefined));
  return server.listen(port, listener.host ?? '127.0.0.1');
}

/** Compares a header with the expected bytes in constant time (for equal lengths). */
function sameBytes(given: string | undefined, expected: Buffer): boolean {
  const bytes = Buffer.from(given ?? '');
  return bytes.length === expected.length && timingSafeEqual(bytes, expected);
}

/** The settings of an internal port, from the configuration. */
export type MetricsListenerConfig = Pick<
  Config,
  | 'METRICS_HOST'
  | 'METRICS_TOKEN'
  | 'METRICS_MAX_CONNECTIONS'
  | 'HTTP_HEADERS_TIMEOUT_MS'
  | 'HTTP_REQUEST_TIMEOUT_MS'
  | 'HTTP_KEEP_ALIVE_TIMEOUT_MS'
>;

/** The process serving a metrics port, as the line logged when the port cannot be bound names it. */
export interface MetricsPortOwner {
  logger: Logger;
  /** `gateway`, `worker`, `reconciler`. */
  role: string;
  /** The variable that sets the port, for the operator to change: `WORKER_PORT`. */
  variable: string;
  /** How the port listens (METRICS_HOST, METRICS_TOKEN, METRICS_MAX_CONNECTIONS, the HTTP timeouts). */
  config: MetricsListenerConfig;
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
  { logger, role, variable, config, readiness }: MetricsPortOwner,
): Promise<{ server: Server; port: number | undefined }> {
  const refusals = summarisedLog<ConnectionRefusal>(logger, 'metrics port: connections refused', 'refused');
  const server = serveMetrics(source, port, readiness, {
    host: config.METRICS_HOST,
    token: config.METRICS_TOKEN,
    maxConnections: config.METRICS_MAX_CONNECTIONS,
    headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    onRefused: (reason, address) => refusals(reason, address === undefined ? undefined : { lastAddress: address }),
  });
  const bound = await new Promise<number | undefined>((resolve) => {
    server.once('listening', () => resolve((server.address() as AddressInfo).port));
    server.once('error', (err) => {
      logger.error(
        { err, port, host: config.METRICS_HOST },
        `metrics port unavailable: this ${role} serves no /metrics (give it its own ${variable})`,
      );
      resolve(undefined);
    });
  });
  return { server, port: bound };
}
