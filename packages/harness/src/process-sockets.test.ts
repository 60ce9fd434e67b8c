import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { killGroup, spawnInGroup } from './process-group.ts';
import { tcpPortsByProcess, tcpPortsOfGroup } from './process-sockets.ts';

const children: ReturnType<typeof spawnInGroup>[] = [];
const servers: Server[] = [];
afterEach(() => {
  for (const child of children.splice(0)) killGroup(child);
  for (const server of servers.splice(0)) server.close();
});

/** A server on loopback that records the client port of every connection it accepts. */
async function recordingServer(): Promise<{ port: number; peers: number[] }> {
  const peers: number[] = [];
  const server = createServer((socket: Socket) => peers.push(socket.remotePort!));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as { port: number }).port, peers };
}

describe('tcpPortsOfGroup and tcpPortsByProcess', () => {
  it("names the local ports of a process group's connections to one server, a grandchild's included, and none of another group's or to another server", async () => {
    const watched = await recordingServer();
    const elsewhere = await recordingServer();
    // Each process connects to both servers: only the connection to the watched one may be named.
    const connect = `const net = require('node:net'); net.connect(${watched.port}, '127.0.0.1'); net.connect(${elsewhere.port}, '127.0.0.1'); setInterval(() => {}, 1000)`;
    // A shell that starts node: the connections are held by the group leader's child, as an npm script's are.
    const group = spawnInGroup('sh', ['-c', `${JSON.stringify(process.execPath)} -e ${JSON.stringify(connect)}; true`], {
      stdio: 'ignore',
    });
    const other = spawnInGroup(process.execPath, ['-e', connect], { stdio: 'ignore' });
    children.push(group, other);
    await expect.poll(() => watched.peers.length + elsewhere.peers.length, { timeout: 30_000 }).toBe(4);
    const peers = watched.peers;

    const ours = tcpPortsOfGroup(group.pid!, watched.port);
    const theirs = tcpPortsOfGroup(other.pid!, watched.port);
    expect(peers.filter((peer) => ours.has(peer))).toHaveLength(1);
    expect(peers.filter((peer) => theirs.has(peer))).toHaveLength(1);
    expect([...ours].filter((peer) => theirs.has(peer))).toEqual([]);
    // One port each: the connection to the other server is not named, whatever its local port.
    expect([ours.size, theirs.size]).toEqual([1, 1]);
    // Asked for the other server, the group's one connection to it.
    const toElsewhere = tcpPortsOfGroup(group.pid!, elsewhere.port);
    expect(toElsewhere.size).toBe(1);
    expect(elsewhere.peers.filter((peer) => toElsewhere.has(peer))).toHaveLength(1);
    // The server's own side is this process's, in neither group.
    expect(ours.has(watched.port) || theirs.has(watched.port)).toBe(false);

    // Process by process: the shell holds no connection, its node child the one.
    const byProcess = tcpPortsByProcess(group.pid!, watched.port);
    expect(byProcess.get(group.pid!)).toEqual(new Set());
    const holders = [...byProcess].filter(([, ports]) => peers.some((peer) => ports.has(peer)));
    expect(holders).toHaveLength(1);
    expect(holders[0]![0]).not.toBe(group.pid);
    expect(holders[0]![1]).toEqual(new Set(peers.filter((peer) => ours.has(peer))));
  });
});
