import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, type Config } from '@flashsale/config';
import { capConnections, summarisedLog, type ConnectionRefusal, type Logger } from '@flashsale/runtime';
import { connectionCeiling, ownOpenFileLimit } from './connection-ceiling.ts';

export type HttpServerConfig = Pick<
  Config,
  | 'MAX_CONNECTIONS_PER_ADDRESS'
  | 'MAX_CONNECTIONS'
  | 'HTTP_HEADERS_TIMEOUT_MS'
  | 'HTTP_REQUEST_TIMEOUT_MS'
  | 'HTTP_KEEP_ALIVE_TIMEOUT_MS'
  | 'TRUST_PROXY'
  | 'METRICS_MAX_CONNECTIONS'
>;

/**
 * The gateway's HTTP server, guarded against clients that hold connections instead of using them:
 *
 * - one client address holds at most MAX_CONNECTIONS_PER_ADDRESS connections (0: no cap); one more is
 *   closed at once, so a single machine cannot take every descriptor while other buyers still get in;
 * - the process holds at most MAX_CONNECTIONS (default: below its open-file limit), past which a new
 *   connection is closed at once, instead of accept() failing with EMFILE;
 * - a request's headers must arrive within HTTP_HEADERS_TIMEOUT_MS (a connection that sends nothing at
 *   all included) and the whole request within HTTP_REQUEST_TIMEOUT_MS: Node answers 408 and closes;
 * - an idle keep-alive connection is closed after HTTP_KEEP_ALIVE_TIMEOUT_MS (clients are told so in
 *   Keep-Alive: timeout=; Node closes 1 s later still, its keepAliveTimeoutBuffer, so a client reusing
 *   the connection at the last moment does not meet a closed socket).
 *
 * Under GATEWAY_WORKERS each process applies these limits to the connections the supervisor hands it, so
 * an address may hold MAX_CONNECTIONS_PER_ADDRESS, and the gateway MAX_CONNECTIONS, per process.
 *
 * The bookkeeping runs once per connection (a count, and a Map entry per client address with connections
 * open, removed with its last one), never per request. Errors of listen() are the caller's (`listen`).
 */
export function createHttpServer(listener: RequestListener, config: HttpServerConfig, logger: Logger): Server {
  if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
    // Node refuses the pair too, but naming the variables tells the operator what to change.
    throw new ConfigError([
      `HTTP_HEADERS_TIMEOUT_MS (${config.HTTP_HEADERS_TIMEOUT_MS}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${config.HTTP_REQUEST_TIMEOUT_MS})`,
    ]);
  }
  const server = createServer(
    {
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      // Node enforces the two timeouts above only when it sweeps its connections, every 30 s by default:
      // a connection that never sends a byte, or sends its headers a byte a second, would be held up to
      // 30 s past them. One sweep a second (faster for timeouts under 4 s) walks the open connections
      // in C++, which costs little even with tens of thousands of them.
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.HTTP_HEADERS_TIMEOUT_MS / 4)),
    },
    listener,
  );

  // Connections refused or lost: the first one logged at once, then counts at most every 10 s while they
  // go on, so an operator learns a limit is hit (and, for the per-address cap, by whom).
  const refusalLog = summarisedLog<Refusal>(logger, 'connections refused', 'refused');
  const refused = (reason: Refusal, address?: string, err?: Error) =>
    refusalLog(reason, { ...(address !== undefined && { lastAddress: address }), ...(err !== undefined && { err }) });
  const { limit: openFileLimit, read: openFileLimitRead } = ownOpenFileLimit();
  // The metrics port's connections are reserved out of the same descriptors: however it is flooded, it
  // holds at most METRICS_MAX_CONNECTIONS, and PORT keeps what is left.
  const derived = connectionCeiling(openFileLimit, config.METRICS_MAX_CONNECTIONS);
  const maxConnections = config.MAX_CONNECTIONS ?? derived;
  capConnections(server, maxConnections, config.MAX_CONNECTIONS_PER_ADDRESS, refused);
  // Once listening, an error on the server is accept() failing (EMFILE that libuv could not absorb, should
  // descriptors run out anyway): that connection is lost, the server goes on, so it is logged rather than
  // left to crash the process.
  server.on('error', (err) => {
    if (server.listening) refused('acceptFailed', undefined, err);
  });

  logger.info(
    {
      maxConnections,
      maxConnectionsFrom: config.MAX_CONNECTIONS === undefined ? 'open-file limit' : 'MAX_CONNECTIONS',
      openFileLimit: openFileLimitRead ? openFileLimit : `unknown, assumed ${openFileLimit}`,
      maxConnectionsPerAddress: config.MAX_CONNECTIONS_PER_ADDRESS,
      headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    'connection limits',
  );
  if (config.MAX_CONNECTIONS !== undefined && config.MAX_CONNECTIONS > derived) {
    logger.warn(
      { maxConnections: config.MAX_CONNECTIONS, openFileLimit },
      'MAX_CONNECTIONS leaves the process too few descriptors of its open-file limit: raise the limit (ulimit -n) or lower MAX_CONNECTIONS',
    );
  }
  if (config.TRUST_PROXY > 0 && config.MAX_CONNECTIONS_PER_ADDRESS > 0) {
    logger.warn(
      { maxConnectionsPerAddress: config.MAX_CONNECTIONS_PER_ADDRESS },
      "behind a proxy (TRUST_PROXY) every connection comes from the proxy's address and MAX_CONNECTIONS_PER_ADDRESS caps them all: set it to 0 if the proxy caps clients itself",
    );
  }
  return server;
}

/** Listens on `port` (0: a free one); resolves with the port, rejects with the listen error (EADDRINUSE...). */
export function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

type Refusal = ConnectionRefusal | 'acceptFailed';
