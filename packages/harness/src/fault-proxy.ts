import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a real server that can act at an exact point of a client's conversation:
 * `onClientData` sees every chunk the client sends before it is forwarded, and may hold it back. Tests
 * use it to kill a process at a precise crash point (say, when a worker sends XACK, after its MySQL
 * commit) without any hook in the code under test.
 */
export interface FaultProxy {
  port: number;
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
  const server: Server = createServer((client) => {
    if (isCut) {
      client.destroy();
      return;
    }
    const upstream = connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      if (onClientData(chunk) === 'forward') upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const closeBoth = () => {
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
