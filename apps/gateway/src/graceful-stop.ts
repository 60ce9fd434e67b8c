import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How a gateway process stops without cutting a request (SIGTERM in a rolling restart):
 *
 * 1. **Drain** (`SHUTDOWN_DRAIN_MS`): `/readyz` answers 503 `stopping`, so a load balancer's health check
 *    takes the process out of rotation, while it still accepts and serves whatever the balancer sends
 *    until it notices. Every response from now on carries `Connection: close`, the response a request
 *    was already waiting for included: each busy keep-alive connection is closed by the server right
 *    after a complete response, never between two requests, and its client opens its next connection
 *    elsewhere (or here, while this still listens).
 * 2. **Close**: stop accepting; connections idle since the drain began (so idle for the whole drain) are
 *    closed; a response still streaming (a dashboard's live view, which never ends by itself) is ended,
 *    and its page reconnects to another process; the requests still in flight are answered, with
 *    `Connection: close`, and the process is done when the last connection has closed.
 *
 * Closing a keep-alive connection between two requests is the one way HTTP/1.1 cuts a request: the
 * client may be sending its next one at that instant. Step 1 leaves only connections idle for the whole
 * drain to step 2, which is the same risk as any idle timeout (and clients are told that one in
 * `Keep-Alive: timeout=`).
 *
 * The cost on the request path is one flag check and one Map write per request (the socket's current
 * response, so the responses in flight when the drain begins can be told to close too).
 */
export class GracefulStop {
  private draining = false;
  /** The response each open connection is answering (or answered last). */
  private readonly current = new Map<Socket, ServerResponse>();

  /** True from the signal on: /readyz answers 503. */
  get stopping(): boolean {
    return this.draining;
  }

  /** The server's listener, wrapped: a response started while stopping closes its connection after it. */
  wrap(listener: RequestListener): RequestListener {
    return (req: IncomingMessage, res: ServerResponse) => {
      if (this.draining) res.shouldKeepAlive = false;
      this.current.set(req.socket, res);
      listener(req, res);
    };
  }

  /** Follows the server's connections (once each, not per request) so the map forgets closed ones. */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => socket.once('close', () => this.current.delete(socket)));
  }

  /** Runs the drain, then the close; resolves once every connection is closed. */
  async stop(server: Server, drainMs: number): Promise<void> {
    this.draining = true;
    // The responses in flight now have not written their headers yet (most): they close their
    // connection too. Connections idle now are left to the drain: their next request is answered with
    // `Connection: close`, or they stay idle through it and are closed below.
    for (const res of this.current.values()) if (!res.headersSent) res.shouldKeepAlive = false;
    if (drainMs > 0) await sleep(drainMs);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // server.close() closes the idle connections itself; a response that has sent its headers and goes
    // on (a stream) cannot carry Connection: close any more, so it is ended here.
    for (const res of this.current.values()) if (res.headersSent && !res.writableEnded) res.end();
    await closed;
  }
}
