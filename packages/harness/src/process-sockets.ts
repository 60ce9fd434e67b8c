import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * The local ports of the TCP connections the processes of one process group hold now to the server
 * listening on `serverPort`, read from Linux's /proc (the group's processes, their sockets' inodes, the
 * kernel's TCP tables). A test that watches a shared server (MariaDB's PROCESSLIST, whose HOST column is
 * `address:port`) tells the statements of the processes it started from those of every other test file
 * with it. Only connections to that server count: Linux gives one local port to several connections at
 * once when they go to different servers (2,000 connections to two servers on loopback: 199 ports held
 * twice), so a port a process holds to Redis may be the port another process holds to MariaDB.
 */
export function tcpPortsOfGroup(groupId: number, serverPort: number): Set<number> {
  return new Set([...tcpPortsByProcess(groupId, serverPort).values()].flatMap((ports) => [...ports]));
}

/**
 * The same, process by process: each process of the group (by pid) with the local ports of its TCP
 * connections (empty when it holds none). A test that counts a server's connections per client process
 * (a gateway's cluster of processes, each with its own pool) tells them apart with it.
 */
export function tcpPortsByProcess(groupId: number, serverPort: number): Map<number, Set<number>> {
  const inodesOf = new Map<number, Set<string>>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = readOrUndefined(`/proc/${pid}/stat`);
    // After the command name (in parentheses, which may hold spaces): state, parent, process group.
    if (stat === undefined || Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== groupId) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone meanwhile
    }
    const inodes = new Set<string>();
    for (const fd of fds) {
      try {
        const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (socket) inodes.add(socket[1]!);
      } catch {
        // closed meanwhile
      }
    }
    inodesOf.set(Number(pid), inodes);
  }
  const portOfInode = new Map<string, number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    // Columns: sl, local_address (hex address:port), rem_address, st, tx:rx queues, tr:when, retrnsmt, uid, timeout, inode.
    for (const line of (readOrUndefined(table) ?? '').split('\n').slice(1)) {
      const columns = line.trim().split(/\s+/);
      if (columns.length > 9 && Number.parseInt(columns[2]!.split(':')[1]!, 16) === serverPort)
        portOfInode.set(columns[9]!, Number.parseInt(columns[1]!.split(':')[1]!, 16));
    }
  }
  const byProcess = new Map<number, Set<number>>();
  for (const [pid, inodes] of inodesOf) {
    byProcess.set(pid, new Set([...inodes].flatMap((inode) => (portOfInode.has(inode) ? [portOfInode.get(inode)!] : []))));
  }
  return byProcess;
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
