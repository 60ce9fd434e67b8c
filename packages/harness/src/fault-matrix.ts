import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PrismaClient } from '@flashsale/order-store';
import { type ScriptedRedis, createSaleStore } from '@flashsale/redis-store';
import { startFaultProxy, type FaultProxy, type LinkFault } from './fault-proxy.ts';
import { compareFaultLedger, ordersOf } from './ledger.ts';
import { signalGroup } from './process-group.ts';
import { spawnGateway, spawnReconciler, spawnWorker, type AppProcess } from './processes.ts';
import { freePort } from './server-start.ts';
import { skewedClockEnv } from './skewed-clock.ts';
import { buyerToken } from './tokens.ts';

// The fault matrix: every fault on every link between a process and a store, on a plain sale and on a
// queued one, each cell with its own processes, its own proxies and its own ledger. The processes talk
// to the stores only through the harness's fault proxies (one per process and store), so a fault acts on
// one link and nothing else; the stores themselves are real servers, never touched.

export const MATRIX_FAULTS = ['kill', 'freeze', 'blackhole', 'latency', 'reset', 'clock'] as const;
export const MATRIX_LINKS = ['gateway-redis', 'worker-redis', 'worker-mysql', 'reconciler-redis', 'reconciler-mysql'] as const;
export const MATRIX_SALES = ['plain', 'queued'] as const;
export type MatrixFault = (typeof MATRIX_FAULTS)[number];
export type MatrixLink = (typeof MATRIX_LINKS)[number];
export type MatrixSale = (typeof MATRIX_SALES)[number];

/** What each fault does, as the table's legend says it. */
export const FAULT_MEANING: Record<MatrixFault, string> = {
  kill: "the link's process SIGKILLed the moment it next sends on the link, restarted a second later",
  freeze: "the link's process SIGSTOPped the moment it next sends on the link, for 8 s (past the workers' claim timeout), then let go",
  blackhole: 'the link accepts and forwards nothing, either way, for 8 s; its connections dropped after',
  latency: 'every chunk on the link delayed 200-500 ms, each way, for 8 s',
  reset: 'every reply on the link cut (RST) after its first half, for 8 s',
  clock: "the link's process runs with its wall clock off by 5 minutes (ahead on a Redis link, behind on a MySQL link), the whole cell",
};

export interface MatrixCell {
  fault: MatrixFault;
  link: MatrixLink;
  sale: MatrixSale;
}

export interface CellResult extends MatrixCell {
  /** Purchases answered 202. */
  accepted: number;
  /** Orders in MySQL (live or not) for the sale. */
  orders: number;
  /** Purchases with no clear answer (none in time, a 5xx) that became orders: the buyer learns it by asking again. */
  unsureBecameOrders: number;
  /** 202s with no order, each named in lost_reservations: losses the system counted and said. */
  listedLosses: number;
  /** Units Redis holds as remaining after the drain, and the sale's stock. */
  remaining: number;
  stock: number;
  /** The longest time without a 202 while buyers kept coming, in ms. */
  longestPauseMs: number;
  /** From the end of the fault to the first 202 after it, in ms (null: none within the cell's wait). */
  sellsAgainMs: number | null;
  verdict: 'exact' | 'losses named' | 'BROKEN';
  /** What broke, when the verdict is BROKEN. */
  broken: string[];
}

/** Where the cell's stores are: a Redis and a MariaDB database the cell's processes reach through proxies. */
export interface MatrixStores {
  redisPort: number;
  databaseUrl: string;
  /** The test's or the script's own clients of the same stores (direct), to create sales and read the ledger. */
  redis: ScriptedRedis;
  prisma: PrismaClient;
  adminToken: string;
  /** Added to every process's environment. */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

/** Each cell's timing and load. */
const CELL = {
  /** When the fault starts after the load, how long it lasts, how long the load runs. */
  faultAtMs: 3000,
  faultMs: 8000,
  loadMs: 15_000,
  /** New buyers a second: a plain sale's buy once; a queued sale's join, poll and buy when admitted. */
  rate: { plain: 25, queued: 12 },
  stock: 1000,
  /** How long a buyer waits for an answer before counting it as none (a frozen gateway). */
  answerMs: 10_000,
  /** How long the cell waits, after the load, for the stream to drain and the sale to be open again. */
  settleMs: 120_000,
} as const;

type ProcessName = 'gateway' | 'worker-1' | 'worker-2' | 'reconciler';

interface Purchase {
  userId: string;
  at: number;
  status: number | null;
  code?: string;
  reservationId?: string;
}

/** Runs one cell: its processes started behind proxies, the crowd, the fault, the heal, the drain, the ledger. */
export async function runMatrixCell(stores: MatrixStores, cell: MatrixCell): Promise<CellResult> {
  const log = stores.log ?? (() => undefined);
  const prefix = `matrix-${randomUUID().slice(0, 8)}`;
  const mysqlPort = Number(new URL(stores.databaseUrl).port || 3306);
  const [linkProcess, store] = cell.link.split('-') as ['gateway' | 'worker' | 'reconciler', 'redis' | 'mysql'];
  // The process a process-level fault acts on: the first worker, for the workers' links.
  const target: ProcessName = linkProcess === 'worker' ? 'worker-1' : linkProcess;

  // A proxy per process and store, each of whose next client chunk a kill or a freeze may wait for.
  let trap: { proxy: FaultProxy; action: 'kill' | 'freeze' } | null = null;
  const proxies = new Map<string, FaultProxy>();
  const proxyFor = async (name: ProcessName, of: 'redis' | 'mysql') => {
    const key = `${name}-${of}`;
    const proxy: FaultProxy = await startFaultProxy(of === 'redis' ? stores.redisPort : mysqlPort, () => {
      if (trap?.proxy !== proxy) return 'forward';
      const { action } = trap;
      trap = null;
      void act(action);
      // A kill drops what it was sending (it never left the process); a frozen process had sent it.
      return action === 'kill' ? 'drop' : 'forward';
    });
    proxies.set(key, proxy);
    return proxy;
  };
  const gatewayPort = await freePort();
  const envOf = async (name: ProcessName): Promise<NodeJS.ProcessEnv> => {
    const redisProxy = await proxyFor(name, 'redis');
    const database = new URL(stores.databaseUrl);
    if (name !== 'gateway') database.port = String((await proxyFor(name, 'mysql')).port);
    const skew = cell.fault === 'clock' && name === target ? skewedClockEnv(store === 'redis' ? 300 : -300) : {};
    return {
      ...stores.env,
      REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
      REDIS_PREFIX: prefix,
      DATABASE_URL: database.toString(),
      ...(name === 'gateway' && { PORT: String(gatewayPort) }),
      ...skew,
    };
  };
  const envs = {
    gateway: await envOf('gateway'),
    'worker-1': await envOf('worker-1'),
    'worker-2': await envOf('worker-2'),
    reconciler: await envOf('reconciler'),
  };
  const starters: Record<ProcessName, () => Promise<AppProcess>> = {
    gateway: () => spawnGateway(envs.gateway),
    'worker-1': () => spawnWorker(envs['worker-1']),
    'worker-2': () => spawnWorker(envs['worker-2']),
    reconciler: () => spawnReconciler(envs.reconciler),
  };
  const processes = new Map<ProcessName, AppProcess>();
  const restarts: Promise<unknown>[] = [];
  const act = async (action: 'kill' | 'freeze') => {
    const child = processes.get(target)!;
    if (action === 'kill') {
      log(`${target}: SIGKILL`);
      await child.kill('SIGKILL');
      await sleep(1000);
      const restarted = starters[target]();
      restarts.push(restarted);
      processes.set(target, await restarted);
      log(`${target}: restarted`);
    } else {
      signalGroup(child.child, 'SIGSTOP');
      log(`${target}: SIGSTOP`);
      await sleep(CELL.faultMs);
      signalGroup(child.child, 'SIGCONT');
      log(`${target}: SIGCONT`);
    }
  };

  try {
    for (const [name, start] of Object.entries(starters) as [ProcessName, () => Promise<AppProcess>][]) processes.set(name, await start());
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    const saleId = await createSale(gatewayUrl, stores.adminToken, cell.sale);
    log(`${cell.fault} on ${cell.link}, ${cell.sale} sale ${saleId} (prefix ${prefix})`);

    // The fault, on its schedule beside the load.
    const linkProxies = [...proxies.entries()]
      .filter(([key]) => key.startsWith(linkProcess) && key.endsWith(store))
      .map(([, proxy]) => proxy);
    const linkFault: LinkFault | null =
      cell.fault === 'blackhole'
        ? { kind: 'blackhole' }
        : cell.fault === 'latency'
          ? { kind: 'latency', minMs: 200, maxMs: 500 }
          : cell.fault === 'reset'
            ? { kind: 'reset-mid-reply' }
            : null;
    const loadStart = Date.now();
    let healedAt = loadStart;
    const fault = (async () => {
      await sleep(CELL.faultAtMs);
      if (linkFault) {
        for (const proxy of linkProxies) proxy.setFault(linkFault);
        log(`${cell.fault}: on`);
        await sleep(CELL.faultMs);
        for (const proxy of linkProxies) proxy.setFault(null);
        log(`${cell.fault}: off`);
      } else if (cell.fault === 'kill' || cell.fault === 'freeze') {
        trap = { proxy: proxies.get(`${target}-${store}`)!, action: cell.fault };
        // The process sends on the link within moments (a worker reads, a reconciler watches, a gateway
        // takes a purchase); then the action runs its course.
        while (trap !== null && Date.now() - loadStart < CELL.loadMs) await sleep(20);
        if (trap !== null) throw new Error(`${target} sent nothing on its ${store} link during the load`);
        await sleep(cell.fault === 'kill' ? 1500 : CELL.faultMs + 200);
        await Promise.all(restarts);
      }
      healedAt = Date.now();
    })();

    const purchases =
      cell.sale === 'plain' ? await plainCrowd(gatewayUrl, saleId, loadStart) : await queuedCrowd(gatewayUrl, saleId, loadStart);
    await fault;

    // After the load: the stream drained, the sale open again, with no command from anyone.
    const settled = await settle(stores, prefix, saleId);
    const probe = await sellsAgain(gatewayUrl, saleId, cell.sale);
    // The probe's own purchase written too.
    const drained =
      settled &&
      (await createSaleStore(stores.redis, prefix)
        .sale(saleId)
        .waitForDrain(CELL.settleMs)
        .then(
          () => true,
          () => false,
        ));
    const all = [...purchases, ...probe];
    const accepted = new Map(all.filter((p) => p.status === 202).map((p) => [p.reservationId!, { userId: p.userId, quantity: 1 }]));
    const uncertain = new Set(all.filter((p) => p.status === null || (p.status >= 500 && p.code !== 'SALE_PAUSED')).map((p) => p.userId));
    const orders = await ordersOf(stores.prisma, saleId);
    const state = await createSaleStore(stores.redis, prefix).sale(saleId).state();
    const ledger = compareFaultLedger(accepted, orders, uncertain, { remaining: state?.remaining ?? Number.NaN, stock: CELL.stock });
    const named = new Set(
      (await stores.prisma.lostReservation.findMany({ where: { saleId }, select: { reservationId: true } })).map((l) => l.reservationId),
    );
    const unnamed = ledger.lost.filter((id) => !named.has(id));
    const broken = [
      ...(drained ? [] : [`not drained and open again within ${CELL.settleMs / 1000} s of the load's end`]),
      ...(unnamed.length > 0 ? [`${unnamed.length} accepted and lost without a name`] : []),
      ...(ledger.duplicated.length > 0 ? [`duplicated: ${ledger.duplicated.slice(0, 3).join(', ')}`] : []),
      ...(ledger.unexpected.length > 0 ? [`orders without a 202: ${ledger.unexpected.slice(0, 3).join(', ')}`] : []),
      ...(ledger.oversold > 0 ? [`oversold by ${ledger.oversold}`] : []),
      ...(ledger.unitsInDb + ledger.remaining !== CELL.stock
        ? [`units in orders ${ledger.unitsInDb} + remaining ${ledger.remaining} != stock ${CELL.stock}`]
        : []),
    ];
    const times = all.filter((p) => p.status === 202).map((p) => p.at);
    const after = times.filter((at) => at >= healedAt);
    return {
      ...cell,
      accepted: accepted.size,
      orders: orders.length,
      unsureBecameOrders: ledger.unknownBecameOrders,
      listedLosses: ledger.lost.length - unnamed.length,
      remaining: ledger.remaining,
      stock: CELL.stock,
      longestPauseMs: longestGap(times, loadStart, loadStart + CELL.loadMs),
      sellsAgainMs: after.length > 0 ? Math.min(...after) - healedAt : null,
      verdict: broken.length > 0 ? 'BROKEN' : ledger.lost.length > 0 ? 'losses named' : 'exact',
      broken,
    };
  } finally {
    trap = null;
    await Promise.allSettled(restarts);
    await Promise.all([...processes.values()].map((p) => (signalGroup(p.child, 'SIGCONT'), p.kill('SIGKILL'))));
    await Promise.all([...proxies.values()].map((p) => p.close()));
  }
}

/** The table the matrix prints: one line a cell. */
export function matrixTable(results: readonly CellResult[]): string {
  const head = [
    'fault',
    'link',
    'sale',
    '202s',
    'orders',
    'unsure → order',
    'listed losses',
    'remaining',
    'longest pause',
    'sells again',
    'verdict',
  ];
  const rows = results.map((r) => [
    r.fault,
    r.link,
    r.sale,
    String(r.accepted),
    String(r.orders),
    String(r.unsureBecameOrders),
    String(r.listedLosses),
    `${r.remaining}/${r.stock}`,
    `${(r.longestPauseMs / 1000).toFixed(1)} s`,
    r.sellsAgainMs === null ? 'never' : `${(r.sellsAgainMs / 1000).toFixed(1)} s`,
    r.verdict === 'BROKEN' ? `BROKEN: ${r.broken.join('; ')}` : r.verdict,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

async function createSale(gatewayUrl: string, adminToken: string, kind: MatrixSale): Promise<number> {
  const startsAt = Date.now() - 1000;
  const res = await fetch(`${gatewayUrl}/api/admin/sales`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: `Fault matrix (${kind})`,
      stock: CELL.stock,
      perUserLimit: 1,
      startsAt: new Date(startsAt).toISOString(),
      endsAt: new Date(startsAt + 3_600_000).toISOString(),
      ...(kind === 'queued' && {
        admission: { mode: 'queue', preQueueSeconds: 0, admitPerSecond: 50, admissionTtlSeconds: 60, noShowFactor: 1 },
      }),
    }),
  });
  const body = (await res.json()) as { id?: number };
  if (res.status !== 201 || typeof body.id !== 'number')
    throw new Error(`creating the ${kind} sale: ${res.status} ${JSON.stringify(body)}`);
  return body.id;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  /** Retry-After in seconds (NaN without one). */
  retryAfter: number;
}

/** One request with a deadline: its status and body, or null when no answer came in time. */
async function call(url: string, init: { method: string; token: string; ticket?: string | null; body?: unknown }): Promise<Answer | null> {
  try {
    const res = await fetch(url, {
      method: init.method,
      headers: {
        authorization: `Bearer ${init.token}`,
        ...(init.ticket ? { 'queue-ticket': init.ticket } : {}),
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(CELL.answerMs),
    });
    const text = await res.text();
    let body: Record<string, unknown> = {};
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      body = { raw: text };
    }
    return { status: res.status, body, retryAfter: Number(res.headers.get('retry-after') ?? '') };
  } catch {
    return null;
  }
}

async function purchase(gatewayUrl: string, saleId: number, userId: string, token: string): Promise<Purchase> {
  const answer = await call(`${gatewayUrl}/api/sales/${saleId}/purchase`, { method: 'POST', token, body: { quantity: 1 } });
  return {
    userId,
    at: Date.now(),
    status: answer?.status ?? null,
    ...(answer && { code: answer.body.code as string | undefined, reservationId: answer.body.reservationId as string | undefined }),
  };
}

/** New buyers at a steady rate for the load's length, each buying once. */
async function plainCrowd(gatewayUrl: string, saleId: number, loadStart: number): Promise<Purchase[]> {
  const buyers = Math.floor((CELL.loadMs / 1000) * CELL.rate.plain);
  const sent: Promise<Purchase>[] = [];
  for (let i = 0; i < buyers; i++) {
    await sleep(Math.max(0, loadStart + (i * 1000) / CELL.rate.plain - Date.now()));
    const userId = `m-${saleId}-${i}`;
    sent.push(purchase(gatewayUrl, saleId, userId, buyerToken(userId)));
  }
  return Promise.all(sent);
}

/**
 * New buyers at a steady rate, each joining the line (again after a 5xx or no answer), asking where it
 * stands no sooner than Retry-After, and buying once admitted; until 30 s after the load at most.
 */
async function queuedCrowd(gatewayUrl: string, saleId: number, loadStart: number): Promise<Purchase[]> {
  const buyers = Math.floor((CELL.loadMs / 1000) * CELL.rate.queued);
  const deadline = loadStart + CELL.loadMs + 30_000;
  const sale = `${gatewayUrl}/api/sales/${saleId}`;
  const journey = async (i: number): Promise<Purchase | null> => {
    const userId = `mq-${saleId}-${i}`;
    const token = buyerToken(userId);
    let ticket: string | null = null;
    while (Date.now() < deadline) {
      const answer: Answer | null = ticket
        ? await call(`${sale}/queue`, { method: 'GET', token, ticket })
        : await call(`${sale}/queue`, { method: 'POST', token, body: {} });
      if (answer?.status === 200) {
        ticket = (answer.body.ticket as string | undefined) ?? ticket;
        const state = answer.body.state as string;
        if (state === 'admitted') return purchase(gatewayUrl, saleId, userId, token);
        if (state === 'not_joined') ticket = null;
        else if (state !== 'waiting') return null;
      }
      const wait = answer && Number.isFinite(answer.retryAfter) && answer.retryAfter > 0 ? answer.retryAfter * 1000 : 500;
      await sleep(Math.min(wait, 2000));
    }
    return null;
  };
  const journeys: Promise<Purchase | null>[] = [];
  for (let i = 0; i < buyers; i++) {
    await sleep(Math.max(0, loadStart + (i * 1000) / CELL.rate.queued - Date.now()));
    journeys.push(journey(i));
  }
  return (await Promise.all(journeys)).filter((p): p is Purchase => p !== null);
}

/** Until the stream is drained and the sale is open (not paused) in Redis; false if not within CELL.settleMs. */
async function settle(stores: MatrixStores, prefix: string, saleId: number): Promise<boolean> {
  const deadline = Date.now() + CELL.settleMs;
  try {
    await createSaleStore(stores.redis, prefix).sale(saleId).waitForDrain(CELL.settleMs);
  } catch {
    return false;
  }
  while (Date.now() < deadline) {
    const state = await createSaleStore(stores.redis, prefix).sale(saleId).state();
    if (state && !state.paused) {
      // Drained again: a rebuild that resumed the sale may have come after entries written meanwhile.
      await createSaleStore(stores.redis, prefix)
        .sale(saleId)
        .waitForDrain(Math.max(1000, deadline - Date.now()))
        .catch(() => undefined);
      return true;
    }
    await sleep(250);
  }
  return false;
}

/** After the cell: a new buyer buys (joining first on a queued sale), tried twice a second for up to a minute. */
async function sellsAgain(gatewayUrl: string, saleId: number, kind: MatrixSale): Promise<Purchase[]> {
  const tries: Purchase[] = [];
  for (let i = 0; i < 120; i++) {
    const userId = `probe-${saleId}-${i}`;
    const token = buyerToken(userId);
    if (kind === 'queued') {
      const joined = await call(`${gatewayUrl}/api/sales/${saleId}/queue`, { method: 'POST', token, body: {} });
      const ticket = joined?.status === 200 ? (joined.body.ticket as string) : null;
      for (let poll = 0; ticket && poll < 20; poll++) {
        const answer = await call(`${gatewayUrl}/api/sales/${saleId}/queue`, { method: 'GET', token, ticket });
        if (answer?.status === 200 && answer.body.state === 'admitted') break;
        await sleep(250);
      }
    }
    const bought = await purchase(gatewayUrl, saleId, userId, token);
    tries.push(bought);
    if (bought.status === 202) break;
    await sleep(500);
  }
  return tries;
}

/** The longest time in [from, to] without one of `times`. */
function longestGap(times: number[], from: number, to: number): number {
  const inside = times.filter((t) => t >= from && t <= to).sort((a, b) => a - b);
  let longest = 0;
  let last = from;
  for (const t of [...inside, to]) {
    longest = Math.max(longest, t - last);
    last = t;
  }
  return longest;
}
