import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** Why a connection was closed at once: over the cap of its address, or over the process's. */
export type ConnectionRefusal = 'overMaxConnectionsPerAddress' | 'overMaxConnections';

/**
 * Closes a new connection at once past `max` in all or `perAddress` (0: no cap) from its address.
 *
 * Not Node's server.maxConnections: under node:cluster a process at that limit answers the supervisor
 * "not accepted", and the supervisor hands the connection on, to the same process again when all are
 * full, back and forth without end (measured: a core each for the supervisor and the process, with the
 * connections held open in the supervisor). Taking the connection and closing it ends it everywhere.
 */
export function capConnections(
  server: Server,
  max: number,
  perAddress: number,
  refused: (reason: ConnectionRefusal, address?: string) => void,
): void {
  let open = 0;
  const openByAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    // Reset before Node handed it over: already closed, nothing to count.
    if (address === undefined) return;
    if (open >= max) {
      socket.destroy();
      refused('overMaxConnections', address);
      return;
    }
    open += 1;
    socket.once('close', () => (open -= 1));
    if (perAddress === 0) return;
    const ofAddress = (openByAddress.get(address) ?? 0) + 1;
    if (ofAddress > perAddress) {
      socket.destroy();
      refused('overMaxConnectionsPerAddress', address);
      return;
    }
    openByAddress.set(address, ofAddress);
    socket.once('close', () => {
      const left = openByAddress.get(address)! - 1;
      if (left === 0) openByAddress.delete(address);
      else openByAddress.set(address, left);
    });
  });
}
