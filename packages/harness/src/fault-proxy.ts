import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a real server that can act at an exact point of a client's conversation:
 * `onClientData` sees every chunk the client sends before it is forwarded, and may hold it back. Tests
 * use it to kill a process at a precise crash point (say, when a worker sends XACK, after its MySQL
 * commit) without any hook in the code under test.
 */
/**
 * A fault on the link, for what the proxy forwards from now on (the fault matrix's link faults):
 * `latency` delays every chunk, each way, by a random time in [minMs, maxMs] (order kept); `blackhole`
 * keeps connections open and accepts new ones but forwards nothing either way (a server that accepts
 * and never answers; the connections it held are dropped when it ends); `reset-mid-reply` lets the next reply's first chunk through, then destroys the
 * connection (RST) before the rest.
 */
export type LinkFault = { kind: 'latency'; minMs: number; maxMs: number } | { kind: 'blackhole' } | { kind: 'reset-mid-reply' };

export interface FaultProxy {
  port: number;
  /** Sets the link's fault (null: none, forwarding as usual). What a blackhole held back is dropped. */
  setFault(fault: LinkFault | null): void;
  /** Drops every connection open now (new ones are accepted): the server end of the link restarted. */
  dropConnections(): void;
  /** Drops every connection and refuses new ones, as if the server were unreachable. */
  cut(): void;
  /** Accepts connections again. */
  restore(): void;
  /**
   * Drops every connection and sends new ones to `port` from now on: a failover's virtual address moved
   * to another server (a promoted replica), the clients reconnecting to it without a restart.
   */
  retarget(port: number): void;
  close(): Promise<void>;
}

export async function startFaultProxy(
  targetPort: number,
  onClientData: (chunk: Buffer) => 'forward' | 'drop' = () => 'forward',
): Promise<FaultProxy> {
  const sockets = new Set<Socket>();
  let isCut = false;
  let target = targetPort;
  let fault: LinkFault | null = null;
  /** Connections a blackhole dropped bytes of. */
  const holed = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (isCut) {
      client.destroy();
      return;
    }
    const upstream = connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    // Each direction keeps its order under latency: a chunk leaves no sooner than the one before it.
    const after = { up: 0, down: 0 };
    const pass = (direction: 'up' | 'down', to: Socket, chunk: Buffer) => {
      if (fault?.kind === 'blackhole') {
        // Its stream has a hole now: when the blackhole ends, the connection is dropped (as a TCP
        // connection whose peer stayed silent is, in the end), never carried on with bytes missing.
        holed.add(client);
        return;
      }
      if (fault?.kind === 'latency') {
        const at = Math.max(after[direction], Date.now() + fault.minMs + Math.random() * (fault.maxMs - fault.minMs));
        after[direction] = at;
        setTimeout(() => to.write(chunk), at - Date.now());
        return;
      }
      if (fault?.kind === 'reset-mid-reply' && direction === 'down') {
        to.write(chunk.subarray(0, Math.max(1, Math.floor(chunk.length / 2))));
        to.resetAndDestroy();
        return;
      }
      to.write(chunk);
    };
    client.on('data', (chunk) => {
      if (onClientData(chunk) === 'forward') pass('up', upstream, chunk);
    });
    upstream.on('data', (chunk) => pass('down', client, chunk));
    const closeBoth = () => {
      holed.delete(client);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', closeBoth).on('error', closeBoth);
    upstream.on('close', closeBoth).on('error', closeBoth);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    setFault(next) {
      fault = next;
      if (next?.kind !== 'blackhole') {
        for (const socket of holed) socket.destroy();
        holed.clear();
      }
    },
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    cut() {
      isCut = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      isCut = false;
    },
    retarget(port) {
      target = port;
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
