import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection } from 'mariadb';
import { killChild } from './child-process.ts';
import { freshDataDirectory } from './mariadb-server.ts';
import { signalGroup, spawnInGroup } from './process-group.ts';
import { freePort, logTail, waitUntilServing } from './server-start.ts';

/**
 * A real 3-node MariaDB Galera cluster on loopback (galera-4's library, mysqldump SST: the settings
 * docs/operations.md gives for running on Galera), behind HAProxy with the project's own
 * infra/galera/haproxy.cfg and its wsrep check: `url()` is the one address the processes use.
 */
export interface GaleraCluster {
  nodes: GaleraNode[];
  /** HAProxy's port: every connection goes to the writer (node 1, or the backup that took over). */
  port: number;
  /** The processes a cluster runs now (every running mariadbd, HAProxy): whose CPU a benchmark counts. */
  pids(): number[];
  /** DATABASE_URL of a database through HAProxy. */
  url(database: string): string;
  /** The node HAProxy sends new connections to now (asks it through HAProxy). */
  writer(): Promise<GaleraNode>;
  /** Resolves once every running node is Synced in one primary component of `size` nodes. */
  waitSynced(size?: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface GaleraNode {
  /** 1, 2 or 3: HAProxy's node1..node3. */
  index: number;
  port: number;
  /** DATABASE_URL of a database on this node directly. */
  url(database: string): string;
  /** Its mariadbd's pid while it runs. */
  readonly pid: number | undefined;
  /**
   * Starts (or restarts) the node; `bootstrap` makes it a new primary component of its own
   * (--wsrep-new-cluster). `recover`: first reads its last committed position from InnoDB
   * (`mariadbd --wsrep-recover`, what systemd's galera_recovery does before every start) and starts from
   * it, so a node that crashed rejoins by IST from a donor's cache. Without it a crashed node's saved
   * position is -1 and it takes a full SST (mysqldump here), during which its donor is Desynced.
   */
  start(options?: { bootstrap?: boolean; recover?: boolean }): Promise<void>;
  /**
   * How the node's last start took the cluster's state, from its log: 'SST' (a full copy from a donor,
   * Desynced meanwhile), 'IST' (only the write-sets it lacked, from a donor's cache), or undefined (none
   * was needed, or it bootstrapped).
   */
  readonly joinedBy: 'SST' | 'IST' | undefined;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: the node neither answers nor leaves; SIGCONT to thaw it. */
  freeze(): void;
  thaw(): void;
  /** The node's Galera status (SHOW GLOBAL STATUS LIKE 'wsrep_%'), null when it does not answer. */
  status(): Promise<Record<string, string> | null>;
  /** Marks the node's saved state as safe to bootstrap from (grastate.dat), as an operator does for a chosen node. */
  markSafeToBootstrap(): void;
}

export interface GaleraClusterOptions {
  /**
   * Extra Galera provider options (`;`-separated), e.g. shorter evs timeouts so a frozen node is evicted
   * in a few seconds rather than the library's default of about 15 s.
   */
  providerOptions?: string;
}

const START_TIMEOUT_MS = 120_000;
const SYNCED = '4';
const LOG_TAIL_CHARS = 3000;
const runFile = promisify(execFile);
const INFRA = resolve(dirname(fileURLToPath(import.meta.url)), '../../../infra/galera');

export async function startGaleraCluster(options: GaleraClusterOptions = {}): Promise<GaleraCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'flashsale-galera-'));
  const ports = await distinctFreePorts(10);
  const layout = [0, 1, 2].map((i) => ({ mysql: ports[i * 3]!, group: ports[i * 3 + 1]!, ist: ports[i * 3 + 2]! }));
  const clusterAddress = `gcomm://${layout.map((l) => `127.0.0.1:${l.group}`).join(',')}`;
  const nodes = layout.map((l, i) => galeraNode(i + 1, join(dir, `node${i + 1}`), l, clusterAddress, options.providerOptions ?? ''));
  const proxyPort = ports[9]!;
  let haproxy: ChildProcess | undefined;
  const cluster: GaleraCluster = {
    nodes,
    port: proxyPort,
    url: (database) => `mysql://root@127.0.0.1:${proxyPort}/${database}`,
    pids: () => [...nodes.flatMap((n) => (n.pid === undefined ? [] : [n.pid])), ...(haproxy?.pid === undefined ? [] : [haproxy.pid])],
    async writer() {
      const connection = await createConnection({ host: '127.0.0.1', port: proxyPort, user: 'root', password: '', connectTimeout: 2000 });
      try {
        const [row] = await connection.query<{ port: number }[]>('SELECT @@port AS port');
        const node = nodes.find((n) => n.port === Number(row!.port));
        if (!node) throw new Error(`HAProxy reached a server on port ${row!.port}, no node of this cluster`);
        return node;
      } finally {
        await connection.end();
      }
    },
    async waitSynced(size = 3, timeoutMs = START_TIMEOUT_MS) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const states: (Record<string, string> | null)[] = await Promise.all(nodes.map((n) => n.status()));
        const synced: unknown[] = states.filter(
          (s) => s !== null && s.wsrep_local_state === SYNCED && s.wsrep_ready === 'ON' && s.wsrep_cluster_size === String(size),
        );
        if (synced.length === size) return;
        if (Date.now() > deadline)
          throw new Error(
            `Galera cluster not Synced with ${size} nodes within ${timeoutMs} ms: ${JSON.stringify(states.map((s) => s && { state: s.wsrep_local_state_comment, size: s.wsrep_cluster_size }))}`,
          );
        await sleep(200);
      }
    },
    async stop() {
      await killChild(haproxy, 'SIGKILL');
      await Promise.all(nodes.map((n) => n.kill('SIGKILL')));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await nodes[0]!.start({ bootstrap: true });
    // One joiner at a time: each takes its state from a donor by mysqldump, which serves one at a time.
    await nodes[1]!.start();
    await nodes[2]!.start();
    await cluster.waitSynced(3);
    haproxy = await startHaproxy(dir, proxyPort, nodes);
    await untilWriterAnswers(cluster);
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

function galeraNode(
  index: number,
  dir: string,
  ports: { mysql: number; group: number; ist: number },
  clusterAddress: string,
  providerOptions: string,
): GaleraNode {
  const datadir = join(dir, 'data');
  freshDataDirectory(datadir);
  let child: ChildProcess | undefined;
  let log = '';
  let joinedBy: GaleraNode['joinedBy'];
  const node: GaleraNode = {
    index,
    port: ports.mysql,
    url: (database) => `mysql://root@127.0.0.1:${ports.mysql}/${database}`,
    get pid() {
      return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    get joinedBy() {
      return joinedBy;
    },
    async start({ bootstrap = false, recover = false } = {}) {
      const provider = [
        `gmcast.listen_addr=tcp://127.0.0.1:${ports.group}`,
        `ist.recv_addr=127.0.0.1:${ports.ist}`,
        ...(providerOptions ? [providerOptions] : []),
      ].join(';');
      const settings = [
        '--no-defaults',
        `--datadir=${datadir}`,
        `--port=${ports.mysql}`,
        `--socket=${join(dir, 'sock')}`,
        '--user=root',
        '--bind-address=127.0.0.1',
        '--skip-name-resolve',
        '--binlog-format=ROW',
        '--innodb-autoinc-lock-mode=2',
        '--wsrep-on=ON',
        '--wsrep-provider=/usr/lib/galera/libgalera_smm.so',
        `--wsrep-cluster-address=${clusterAddress}`,
        `--wsrep-node-address=127.0.0.1:${ports.group}`,
        `--wsrep-node-name=node${index}`,
        `--server-id=${index}`,
        `--wsrep-provider-options=${provider}`,
        '--wsrep-sst-method=mysqldump',
        '--wsrep-sst-auth=root:',
        `--wsrep-sst-receive-address=127.0.0.1:${ports.mysql}`,
      ];
      const position = recover ? [`--wsrep-start-position=${await recoveredPosition(settings)}`] : [];
      const started = spawnInGroup('mariadbd', [...settings, ...position, ...(bootstrap ? ['--wsrep-new-cluster'] : [])], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child = started;
      log = '';
      joinedBy = undefined;
      started.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        // Read before the tail is cut: a busy machine hands over tens of kB of log in one chunk.
        joinedBy ??= stateTransferIn(log + chunk);
        log = (log + chunk).slice(-LOG_TAIL_CHARS);
      });
      await waitUntilServing(
        started,
        `Galera node ${index} on ${ports.mysql}`,
        START_TIMEOUT_MS,
        async () => {
          const status = await node.status();
          if (status === null) return { kind: 'not-yet' };
          return status.wsrep_local_state === SYNCED && status.wsrep_ready === 'ON' ? { kind: 'ours' } : { kind: 'not-yet' };
        },
        () => log,
      );
    },
    kill(signal = 'SIGKILL') {
      if (child && signal === 'SIGKILL') signalGroup(child, 'SIGCONT');
      return killChild(child, signal);
    },
    freeze() {
      if (child) signalGroup(child, 'SIGSTOP');
    },
    thaw() {
      if (child) signalGroup(child, 'SIGCONT');
    },
    async status() {
      const connection = await createConnection({
        host: '127.0.0.1',
        port: ports.mysql,
        user: 'root',
        password: '',
        connectTimeout: 1000,
        socketTimeout: 2000,
      }).catch(() => null);
      if (!connection) return null;
      try {
        const rows = await connection.query<{ Variable_name: string; Value: string }[]>("SHOW GLOBAL STATUS LIKE 'wsrep\\_%'");
        return Object.fromEntries(rows.map((r) => [r.Variable_name, r.Value]));
      } catch {
        return null;
      } finally {
        connection.destroy();
      }
    },
    markSafeToBootstrap() {
      const file = join(datadir, 'grastate.dat');
      writeFileSync(file, readFileSync(file, 'utf8').replace(/safe_to_bootstrap:\s*0/, 'safe_to_bootstrap: 1'));
    },
  };
  return node;
}

/**
 * The state transfer a joiner's log announces. Galera logs an IST as an SST that is bypassed ("SST setting
 * local position to P current P": the position it has), and a full SST as one from nothing ("current
 * 00000000-…:-1"), followed by a short IST of what came meanwhile.
 */
function stateTransferIn(log: string): 'SST' | 'IST' | undefined {
  const found = /SST setting local position to ([0-9a-f-]+:-?\d+)\S* current ([0-9a-f-]+:-?\d+)/.exec(log);
  if (!found) return undefined;
  return found[1] === found[2] ? 'IST' : 'SST';
}

/** The last committed position InnoDB holds (`uuid:seqno`), as `mariadbd --wsrep-recover` logs it. */
async function recoveredPosition(settings: string[]): Promise<string> {
  const { stderr } = await runFile('mariadbd', [...settings, '--wsrep-recover'], { timeout: START_TIMEOUT_MS });
  const found = /WSREP: Recovered position: (\S+:-?\d+)/.exec(stderr);
  if (!found) throw new Error(`mariadbd --wsrep-recover named no position; its log ends:\n${stderr.slice(-LOG_TAIL_CHARS)}`);
  return found[1]!;
}

/** HAProxy with infra/galera/haproxy.cfg, its addresses from the environment as in a deployment. */
async function startHaproxy(dir: string, port: number, nodes: GaleraNode[]): Promise<ChildProcess> {
  const child = spawnInGroup('haproxy', ['-db', '-f', join(INFRA, 'haproxy.cfg')], {
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: dir,
    env: {
      ...process.env,
      GALERA_LISTEN: `127.0.0.1:${port}`,
      GALERA_NODE_1: `127.0.0.1:${nodes[0]!.port}`,
      GALERA_NODE_2: `127.0.0.1:${nodes[1]!.port}`,
      GALERA_NODE_3: `127.0.0.1:${nodes[2]!.port}`,
      GALERA_CHECK: join(INFRA, 'wsrep-check.sh'),
    },
  });
  const log = logTail(child.stderr, LOG_TAIL_CHARS);
  await waitUntilServing(
    child,
    `HAProxy on ${port}`,
    30_000,
    async () => {
      const connection = await createConnection({ host: '127.0.0.1', port, user: 'root', password: '', connectTimeout: 1000 });
      connection.destroy();
      return { kind: 'ours' };
    },
    log,
  );
  return child;
}

/** HAProxy takes a node only after `rise` passing checks: until then its clients are refused. */
async function untilWriterAnswers(cluster: GaleraCluster): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await cluster.writer();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(100);
    }
  }
}
