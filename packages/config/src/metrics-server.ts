import { createServer, type Server } from 'node:http';

/**
 * What `/metrics` answers: a prom-client Registry, or anything that renders one, such as the sum of a
 * node:cluster's processes gathered by an AggregatorRegistry.
 */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

/**
 * The small internal HTTP server of a process (worker, reconciler, the gateway's METRICS_PORT):
 * `/metrics` in Prometheus text format and `/healthz`, on `port` (0 picks a free one; read it from the
 * `listening` event).
 */
export function serveMetrics(registry: MetricsSource, port: number): Server {
  return createServer((req, res) => {
    if (req.url === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    } else if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else {
      res.writeHead(404).end();
    }
  }).listen(port);
}
