/**
 * The galera part (BENCH_PARTS=galera): what synchronous replication costs the order writes. The same
 * backlog of reservations (accepted by the real reserve script) is drained by two worker processes into
 * (a) one mariadbd and (b) a 3-node MariaDB Galera cluster behind HAProxy (the harness's
 * startGaleraCluster, infra/galera/haproxy.cfg: one writer), alternated round by round in the same run.
 * The gateway never touches MySQL, so this is the pipeline's MySQL side: orders per second from the
 * signal to the drain, and CPU per order of the workers, every mariadbd and HAProxy.
 */
import { loadavg } from 'node:os';
import { createConnection } from 'mariadb';
import { startGaleraCluster, startMariaDbServer } from '@flashsale/harness';
import { createSaleStore, type SaleStore } from '@flashsale/redis-store';
import { createPrisma, migrate, poolConfigFromUrl } from '@flashsale/order-store';
import { drainByWorkers, startWorkerPool, type WorkerPool } from './drain.ts';
import { median } from './load.ts';
import { loadRange, type PartContext } from './part-context.ts';
import type { RunInfo } from './summary.ts';
import { mariadbPidOf } from './pipeline-servers.ts';
import { cpuSeconds } from './servers.ts';

export interface GaleraDrain {
  ordersPerSecond: number;
  /** The box's one-minute load average when the drain began (older recorded runs lack it). */
  loadAverage?: number;
  cpuUsPerOrder: { workers: number; mysql: number; total: number };
}

export interface GaleraResults {
  orders: number;
  one: GaleraDrain[];
  cluster: GaleraDrain[];
}

const ORDERS = 20_000;
const DATABASE = 'flashsale_bench_galera';

interface Contender {
  url: string;
  /** The MySQL side's processes now (one mariadbd; or three and HAProxy). */
  mysqlPids(): Promise<number[]>;
}

export async function galeraPart(part: PartContext): Promise<GaleraResults> {
  part.log(
    `galera: ${ORDERS} orders drained by 2 workers into one mariadbd and into a 3-node Galera cluster behind HAProxy, ${part.settings.rounds} rounds alternating`,
  );
  const one = await startMariaDbServer();
  part.stops.push(() => one.stop());
  const began = performance.now();
  const cluster = await startGaleraCluster();
  part.stops.push(() => cluster.stop());
  part.log(`galera: cluster started in ${Math.round((performance.now() - began) / 1000)} s`);
  const contenders: Record<'one' | 'cluster', Contender> = {
    one: { url: one.url(DATABASE), mysqlPids: async () => [await pidOf(one.url(DATABASE))] },
    cluster: { url: cluster.url(DATABASE), mysqlPids: async () => cluster.pids() },
  };
  const pools = new Map<string, WorkerPool>();
  const stores = new Map<string, SaleStore>();
  const results: GaleraResults = { orders: ORDERS, one: [], cluster: [] };
  // A Redis prefix per contender: each database numbers its sales from 1, and sale 1 of one must not be
  // sale 1 of the other in Redis.
  for (const [name, c] of Object.entries(contenders)) {
    await migrate(c.url);
    const store = createSaleStore(part.redis, `${part.prefix}-${name}`);
    stores.set(name, store);
    part.stops.push(() => store.deleteAllKeys());
    const pool = await startWorkerPool(part.redis, { ...part.env, DATABASE_URL: c.url }, store.prefix, 2);
    part.stops.push(() => pool.stop());
    pools.set(name, pool);
  }
  for (let round = 0; round <= part.settings.rounds; round++) {
    for (const [name, c] of Object.entries(contenders) as ['one' | 'cluster', Contender][]) {
      const prisma = createPrisma(c.url, 2);
      try {
        const pool = pools.get(name)!;
        const pids = await c.mysqlPids();
        const workerPids = pool.workers.map((w) => w.child.pid!);
        const cpu = () => ({ workers: sum(workerPids.map(cpuSeconds)), mysql: sum(pids.map(cpuSeconds)) });
        const loadAverage = Number(loadavg()[0]!.toFixed(2));
        const before = cpu();
        const seconds = await drainByWorkers(part.redis, stores.get(name)!, prisma, pool, { count: ORDERS, sales: 1, workers: 2 });
        const after = cpu();
        const us = (s: number) => Number(((s * 1e6) / ORDERS).toFixed(1));
        const drain = {
          ordersPerSecond: Math.round(ORDERS / seconds),
          loadAverage,
          cpuUsPerOrder: {
            workers: us(after.workers - before.workers),
            mysql: us(after.mysql - before.mysql),
            total: us(after.workers - before.workers + after.mysql - before.mysql),
          },
        };
        // Round 0 warms the workers and the servers up; it is logged, not kept.
        if (round > 0) results[name].push(drain);
        part.log(
          `galera: round ${round}${round === 0 ? ' (warm-up)' : ''} ${name}: ${drain.ordersPerSecond} orders/s, CPU per order ${JSON.stringify(drain.cpuUsPerOrder)} us`,
        );
      } finally {
        await prisma.$disconnect();
      }
    }
  }
  const [a, b] = [mediansOf(results.one), mediansOf(results.cluster)];
  part.log(
    `galera: medians: one server ${a.ordersPerSecond} orders/s, ${a.total} us CPU per order (workers ${a.workers}, mariadbd ${a.mysql}); Galera ${b.ordersPerSecond} orders/s, ${b.total} us (workers ${b.workers}, 3 mariadbd + HAProxy ${b.mysql}); rate ${(b.ordersPerSecond / a.ordersPerSecond).toFixed(2)}x, CPU ${(b.total / a.total).toFixed(2)}x`,
  );
  return results;
}

/** A contender's drains, as the medians of their rate and CPU per order, and the range of their rates. */
function mediansOf(runs: GaleraDrain[]) {
  const rates = runs.map((d) => d.ordersPerSecond);
  return {
    ordersPerSecond: median(rates),
    rates: `${Math.min(...rates)} to ${Math.max(...rates)}`,
    workers: median(runs.map((d) => d.cpuUsPerOrder.workers)),
    mysql: median(runs.map((d) => d.cpuUsPerOrder.mysql)),
    total: median(runs.map((d) => d.cpuUsPerOrder.total)),
  };
}

/** The galera section of docs/BENCHMARKS.md: medians of the rounds and the ratios Galera / one server. */
export function galeraMarkdown(r: RunInfo, g: GaleraResults): string {
  const [a, b] = [mediansOf(g.one), mediansOf(g.cluster)];
  const loaded = [...g.one, ...g.cluster].filter((d): d is GaleraDrain & { loadAverage: number } => d.loadAverage !== undefined);
  const row = (label: string, s: ReturnType<typeof mediansOf>, mysql: string) =>
    `| ${label} | ${s.ordersPerSecond} (rounds ${s.rates}) | ${s.workers} | ${s.mysql} (${mysql}) | ${s.total} |`;
  return [
    `${r.date.slice(0, 10)}, \`${r.command}\` on ${r.commit}, ${g.cluster.length} rounds alternating the contenders after a warm-up; medians. Machine: ${r.machine}; Node ${r.node}.`,
    '',
    `${g.orders.toLocaleString('en-US')} reservations drained by two worker processes into one \`mariadbd\` and into a 3-node Galera cluster on the same box behind HAProxy (one writer)${loaded.length ? `; load average ${loadRange(loaded)} at the start of the drains` : ''}. Galera / one server: **${(b.ordersPerSecond / a.ordersPerSecond).toFixed(2)}x the rate, ${(b.total / a.total).toFixed(2)}x the CPU per order**.`,
    '',
    '| MySQL | orders/s | CPU µs/order: workers | MySQL side | total |',
    '|---|---|---|---|---|',
    row('one `mariadbd`', a, 'the `mariadbd`'),
    row('3-node Galera + HAProxy', b, 'three `mariadbd`, HAProxy'),
  ].join('\n');
}

const sum = (values: number[]) => values.reduce((s, v) => s + v, 0);

async function pidOf(url: string): Promise<number> {
  const connection = await createConnection(poolConfigFromUrl(url));
  try {
    return await mariadbPidOf(connection);
  } finally {
    await connection.end();
  }
}
