import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';

/**
 * The small HTTP server of a background process (worker, reconciler): `/metrics` in Prometheus text
 * format and `/healthz`, on `port` (0 picks a free one; read it from the `listening` event).
 */
export function serveMetrics(registry: Registry, port: number): Server {
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
