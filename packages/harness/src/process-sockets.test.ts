import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { killGroup, spawnInGroup } from './process-group.ts';
import { tcpPortsByProcess, tcpPortsOfGroup } from './process-sockets.ts';

const children: ReturnType<typeof spawnInGroup>[] = [];
afterEach(() => {
  for (const child of children.splice(0)) killGroup(child);
});

describe('tcpPortsOfGroup and tcpPortsByProcess', () => {
  it("names the local ports of a process group's connections, a grandchild's included, and none of another group's", async () => {
    const peers: number[] = [];
    const server = createServer((socket: Socket) => peers.push(socket.remotePort!));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    // A shell that starts node: the connection is held by the group leader's child, as an npm script's is.
    const connect = `require('node:net').connect(${port}, '127.0.0.1'); setInterval(() => {}, 1000)`;
    const group = spawnInGroup('sh', ['-c', `${JSON.stringify(process.execPath)} -e ${JSON.stringify(connect)}; true`], {
      stdio: 'ignore',
    });
    const other = spawnInGroup(process.execPath, ['-e', connect], { stdio: 'ignore' });
    children.push(group, other);
    await expect.poll(() => peers.length, { timeout: 30_000 }).toBe(2);

    const ours = tcpPortsOfGroup(group.pid!);
    const theirs = tcpPortsOfGroup(other.pid!);
    expect(peers.filter((peer) => ours.has(peer))).toHaveLength(1);
    expect(peers.filter((peer) => theirs.has(peer))).toHaveLength(1);
    expect([...ours].filter((peer) => theirs.has(peer))).toEqual([]);
    // The server's own side is this process's, in neither group.
    expect(ours.has(port) || theirs.has(port)).toBe(false);

    // Process by process: the shell holds no connection, its node child the one.
    const byProcess = tcpPortsByProcess(group.pid!);
    expect(byProcess.get(group.pid!)).toEqual(new Set());
    const holders = [...byProcess].filter(([, ports]) => peers.some((peer) => ports.has(peer)));
    expect(holders).toHaveLength(1);
    expect(holders[0]![0]).not.toBe(group.pid);
    expect(holders[0]![1]).toEqual(new Set(peers.filter((peer) => ours.has(peer))));
    server.close();
  });
});
