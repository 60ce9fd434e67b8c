/**
 * What one sale of many buyers costs when it is reconciled and when its stats are read, at sizes given on
 * the command line (CHANGELOG.md tells what they cost before). For each size, in a database and a
 * redis-server of its own (both removed at the end):
 *
 *   1. fills MySQL in bulk (INSERT ... SELECT from MariaDB's sequence engine, 100,000 rows a statement):
 *      N orders of one sale, 1 unit each, one in twenty cancelled, one in twenty expired, one in five paid,
 *      the rest awaiting payment; the sale's counters as the migration backfills them;
 *   2. publishes the sale in Redis and writes its buyers hash (the live orders), as the reserve script
 *      would have left it;
 *   3. reads the stats 10 times as GET /api/admin/sales/:id/stats does (readSaleStats), and times the
 *      GROUP BY the stats ran before the counters (Prisma's groupBy, as it was) on the same data;
 *   4. runs `npm run reconcile -- --sale <id>` as a process of its own, sampling its RSS (peak: VmHWM)
 *      and, with --live-heap, its heap after a full GC (bench/live-heap.mjs), with SLOWLOG recording
 *      every command: the longest command Redis ran during the reconcile, the buyers' chunks;
 *   5. deletes the rebuilt buyers hash with DEL, as the rebuild script did before: the cost UNLINK avoids.
 *
 *   npm run bench:big-sale -- [--buyers 300000,1000000] [--live-heap] [--reconciler-root DIR]
 *
 * Prints one line per size and a JSON summary.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection } from 'mariadb';
import { exitWithUsage, parseCommandLine } from '@flashsale/config';
import { createOrderStore, createPrisma, dropDatabase, migrate, poolConfigFromUrl, type PrismaClient } from '@flashsale/order-store';
import { createRedis, createSaleStore } from '@flashsale/redis-store';
import { startRedisServer } from '@flashsale/harness';
import { createSales } from '@flashsale/sales';
import { createLogger } from '@flashsale/runtime';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const COMMAND = {
  usage: `usage: npm run bench:big-sale -- [--buyers N[,N...]] [--mysql URL]

For each N: one sale of N orders in a database of its own, its buyers in a redis-server of its own;
measures the stats' latency (and the GROUP BY it replaced), then reconciles the sale in a process of
its own and reports its peak RSS and the longest Redis command during the reconcile (SLOWLOG), and
what a DEL of the buyers hash would have held Redis. Removes the database and the redis-server after.

  --buyers N,...   orders of the sale, one run per size (default 300000,1000000)
  --mysql URL      the MySQL server to create the databases on (default mysql://root@127.0.0.1:3306)
  --reconciler-root DIR
                   run the reconcile command of another checkout (an older version, to compare: it
                   must read a database migrated by this one), default this one
  --live-heap      sample the reconcile process's live heap (after a full GC, every 500 ms) and report
                   its largest: what it holds, apart from garbage not yet collected
  --reconciler-heap-mb MB
                   cap the reconcile process's V8 old space (--max-old-space-size): a reconcile that
                   completes under a cap smaller than its buyers would take holds them in pages only`,
  options: {
    buyers: { type: 'string', default: '300000,1000000' },
    mysql: { type: 'string', default: 'mysql://root@127.0.0.1:3306' },
    'reconciler-root': { type: 'string', default: ROOT },
    'reconciler-heap-mb': { type: 'string' },
    'live-heap': { type: 'boolean', default: false },
  },
} as const;

export interface BigSaleFigures {
  buyers: number;
  liveBuyers: number;
  fillSeconds: number;
  stats: Timing;
  /** The stats read again after the reconcile. */
  statsLater: Timing;
  groupByBefore: Timing;
  /** Rows MySQL read (Handler_read_*) for the stats' ledger and for the GROUP BY it replaced: a measure the machine's load does not move. */
  rowsRead: { stats: number; groupByBefore: number };
  reconcile: {
    seconds: number;
    peakRssMb: number;
    /** With --live-heap: the largest heap in use right after a full GC, over the reconcile. */
    liveHeapMaxMb: number | null;
    longestRedisCommand: { micros: number; command: string };
    /** The five longest commands of the reconcile. */
    top: string[];
    /** The rebuild's chunks (HSET of up to 1,000 buyers): how many, and their median and longest time. */
    hsetMicros: { count: number; median: number; p99: number; max: number };
    /** The O(1) PEXPIRE after each chunk: the machine's noise. */
    pexpireMicros: { median: number; max: number };
  };
  delOfBuyersHashMs: number;
}

const ROWS_PER_INSERT = 100_000;

async function measureSize(buyers: number, mysqlServer: string, reconcilerRoot: string, nodeArgs: string[]): Promise<BigSaleFigures> {
  const database = `flashsale_bench_bigsale_${randomBytes(4).toString('hex')}`;
  const databaseUrl = `${mysqlServer.replace(/\/$/, '')}/${database}`;
  const server = await startRedisServer({ args: ['--slowlog-max-len', '100000'] });
  const redis = createRedis(server.url, { name: 'bench-big-sale' });
  const store = createSaleStore(redis, `bench-bigsale-${randomBytes(4).toString('hex')}`);
  const prisma = createPrisma(databaseUrl, 4);
  const sales = createSales({
    saleStore: store,
    prisma,
    logger: createLogger('bench-big-sale', 'silent'),
    options: { databaseUrl, publishTimeoutMs: 5_000, drainTimeoutMs: 60_000 },
  });
  try {
    await migrate(databaseUrl);
    const filled = performance.now();
    const now = await store.now();
    const sale = await createOrderStore(prisma).insertSale({
      name: `big sale of ${buyers}`,
      stock: buyers,
      perUserLimit: 1,
      startsAt: new Date(now - 60_000),
      endsAt: new Date(now + 3_600_000),
    });
    const { database: _db, ...serverConfig } = poolConfigFromUrl(databaseUrl);
    const connection = await createConnection({ ...serverConfig, database });
    try {
      for (let from = 1; from <= buyers; from += ROWS_PER_INSERT) {
        const to = Math.min(buyers, from + ROWS_PER_INSERT - 1);
        await connection.query(
          `INSERT INTO orders (reservation_id, sale_id, user_id, quantity, status, reserved_at, pay_by, paid_at, closed_at)
           SELECT CONCAT(?, '-bench-', seq), ?, CONCAT('buyer-', seq), 1,
             CASE WHEN seq % 20 = 0 THEN 'cancelled' WHEN seq % 20 = 1 THEN 'expired' WHEN seq % 5 = 2 THEN 'paid' ELSE 'created' END,
             NOW(3), NOW(3) + INTERVAL 1 HOUR,
             IF(seq % 20 > 1 AND seq % 5 = 2, NOW(3), NULL), IF(seq % 20 < 2, NOW(3), NULL)
           FROM seq_1_to_${buyers} WHERE seq BETWEEN ? AND ?`,
          [sale.id, sale.id, from, to],
        );
      }
      // The counters as the migration backfills them, and sold_units as the writers keep it.
      await connection.query(
        `UPDATE sales s JOIN (SELECT COUNT(*) AS o, SUM(quantity) AS u,
            SUM(status = 'cancelled') AS co, SUM(IF(status = 'cancelled', quantity, 0)) AS cu,
            SUM(status = 'expired') AS eo, SUM(IF(status = 'expired', quantity, 0)) AS eu,
            SUM(IF(status IN ('created', 'paid'), quantity, 0)) AS live
          FROM orders WHERE sale_id = ?) t
         SET s.orders_written = t.o, s.units_written = t.u, s.cancelled_orders = t.co, s.cancelled_units = t.cu,
           s.expired_orders = t.eo, s.expired_units = t.eu, s.sold_units = t.live WHERE s.id = ?`,
        [sale.id, sale.id],
      );
      await connection.query(
        `INSERT INTO sale_paid_counts (sale_id, slot, orders, units) SELECT sale_id, 0, COUNT(*), SUM(quantity) FROM orders WHERE sale_id = ? AND status = 'paid' GROUP BY sale_id`,
        [sale.id],
      );
    } finally {
      await connection.end();
    }
    const live = await prisma.order.count({ where: { saleId: sale.id, status: { in: ['created', 'paid'] } } });
    await store.publish({ ...sale, stock: buyers }, sale.generation);
    const { keys } = store.sale(sale.id);
    await redis.hset(keys.meta, 'remaining', String(buyers - live));
    const buyersKey = keys.buyers;
    for (let from = 1; from <= buyers; from += 10_000) {
      const pipeline = redis.pipeline();
      const fields: string[] = [];
      for (let seq = from; seq < Math.min(buyers + 1, from + 10_000); seq++) {
        if (seq % 20 < 2) continue;
        fields.push(`buyer-${seq}`, `${sale.id}-bench-${seq}|1|${now}`);
        if (fields.length >= 2_000) pipeline.hset(buyersKey, ...fields.splice(0));
      }
      if (fields.length > 0) pipeline.hset(buyersKey, ...fields);
      await pipeline.exec();
    }
    const fillSeconds = (performance.now() - filled) / 1000;

    const stats = await timed(10, () => sales.readSaleStats(sale.id));
    const groupByBefore = await timed(10, () =>
      prisma.order.groupBy({ by: ['status'], where: { saleId: sale.id }, _count: { _all: true }, _sum: { quantity: true } }),
    );

    const rowsRead = {
      stats: await rowsReadBy(databaseUrl, (one) => createOrderStore(one).sale(sale.id).orderLedger()),
      groupByBefore: await rowsReadBy(databaseUrl, (one) =>
        one.order.groupBy({ by: ['status'], where: { saleId: sale.id }, _count: { _all: true }, _sum: { quantity: true } }),
      ),
    };

    await redis.config('SET', 'slowlog-log-slower-than', '0');
    await redis.slowlog('RESET');
    const reconcile = await reconcileInProcess(reconcilerRoot, nodeArgs, sale.id, {
      DATABASE_URL: databaseUrl,
      REDIS_URL: server.url,
      REDIS_PREFIX: store.prefix,
    });
    const entries = (await redis.slowlog('GET', '-1')) as [number, number, number, string[]][];
    await redis.config('SET', 'slowlog-log-slower-than', '10000');
    // The longest command, and the longest besides the first call of each script (EVAL after NOSCRIPT:
    // Redis compiles the script then, once per Redis start, whatever the sale's size).
    const longest = entries.reduce((max, entry) => (entry[2] > max[2] ? entry : max), [0, 0, 0, ['none']] as [
      number,
      number,
      number,
      string[],
    ]);
    const top = [...entries]
      .sort((a, b) => b[2] - a[2])
      .slice(0, 5)
      .map((e) => `${(e[2] / 1000).toFixed(2)} ms ${e[3][0]}${e[3][0]?.toLowerCase() === 'eval' ? '' : ` ${e[3][1] ?? ''}`}`);
    // SLOWLOG keeps 32 arguments of a command: a buyers chunk (2,001) shows as 32.
    // PEXPIRE is O(1) and follows every chunk: its longest is what the machine's load alone adds to a
    // command (Redis descheduled mid-command), the floor under which no chunk size can go.
    const pexpires = entries
      .filter((e) => e[3][0]?.toLowerCase() === 'pexpire')
      .map((e) => e[2])
      .sort((a, b) => a - b);
    const hsets = entries.filter((e) => e[3][0]?.toLowerCase() === 'hset' && e[3].length >= 32).map((e) => e[2]);
    const buyersAfter = await redis.hlen(buyersKey);
    if (buyersAfter !== live) throw new Error(`the rebuilt buyers hash holds ${buyersAfter} buyers, MySQL ${live} live orders`);

    // Again once the reconcile is over: MySQL is still flushing the bulk fill when the first reading runs.
    const statsLater = await timed(10, () => sales.readSaleStats(sale.id));
    const deleted = performance.now();
    await redis.del(buyersKey);
    const delOfBuyersHashMs = performance.now() - deleted;
    return {
      buyers,
      liveBuyers: live,
      fillSeconds: round(fillSeconds),
      stats,
      statsLater,
      groupByBefore,
      rowsRead,
      reconcile: {
        ...reconcile,
        longestRedisCommand: { micros: longest[2], command: longest[3][0] ?? '' },
        top,
        hsetMicros: {
          count: hsets.length,
          median: hsets.sort((a, b) => a - b)[Math.floor(hsets.length / 2)] ?? 0,
          p99: hsets[Math.floor(hsets.length * 0.99)] ?? 0,
          max: hsets.at(-1) ?? 0,
        },
        pexpireMicros: { median: pexpires[Math.floor(pexpires.length / 2)] ?? 0, max: pexpires.at(-1) ?? 0 },
      },
      delOfBuyersHashMs: round(delOfBuyersHashMs),
    };
  } finally {
    await prisma.$disconnect();
    redis.disconnect();
    await server.stop();
    await dropDatabase(databaseUrl);
  }
}

/** Rows MySQL read for `work`, on a client of one connection (the session's Handler_read_* counters). */
async function rowsReadBy(databaseUrl: string, work: (one: PrismaClient) => Promise<unknown>): Promise<number> {
  const one = createPrisma(databaseUrl, 1);
  try {
    const read = async () => {
      const rows = await one.$queryRawUnsafe<{ Variable_name: string; Value: string }[]>("SHOW SESSION STATUS LIKE 'Handler_read%'");
      return rows.reduce((sum, row) => sum + Number(row.Value), 0);
    };
    const before = await read();
    await work(one);
    return (await read()) - before;
  } finally {
    await one.$disconnect();
  }
}

interface Timing {
  minMs: number;
  medianMs: number;
  maxMs: number;
}

async function timed(runs: number, work: () => Promise<unknown>): Promise<Timing> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { minMs: round(times[0]!), medianMs: round(times[Math.floor(runs / 2)]!), maxMs: round(times[runs - 1]!) };
}

/** Runs the reconcile command as its own process; its peak RSS from /proc (VmHWM, read until it exits). */
async function reconcileInProcess(
  root: string,
  nodeArgs: string[],
  saleId: number,
  env: Record<string, string>,
): Promise<{ seconds: number; peakRssMb: number; liveHeapMaxMb: number | null }> {
  const started = performance.now();
  const startedAt = Date.now();
  const child = spawn(
    process.execPath,
    [...nodeArgs, '--conditions=@flashsale/source', '--import', 'tsx', 'apps/reconciler/src/reconcile-cli.ts', '--sale', String(saleId)],
    {
      cwd: root,
      env: { ...process.env, ...env, LOG_LEVEL: 'info', RECONCILE_DRAIN_TIMEOUT_MS: '600000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  let peakKb = 0;
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let done = false;
  void exited.then(() => (done = true));
  while (!done) {
    try {
      const hwm = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
    } catch {
      // Exited between two reads.
    }
    await sleep(20);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`the reconcile exited ${code}: ${output}${errors}`);
  // Its steps as it logged them (pino lines on stdout), with the time each was logged.
  for (const line of output.split('\n')) {
    const entry = /^\{/.test(line) ? (JSON.parse(line) as { time?: number; msg?: string }) : null;
    if (entry?.msg?.startsWith('reconcile:')) console.log(`    ${round(((entry.time ?? 0) - startedAt) / 1000)} s  ${entry.msg}`);
  }
  const liveHeap = /^live-heap-max-mb=(\d+)$/m.exec(errors);
  return {
    seconds: round((performance.now() - started) / 1000),
    peakRssMb: round(peakKb / 1024),
    liveHeapMaxMb: liveHeap ? Number(liveHeap[1]) : null,
  };
}

const round = (value: number) => Math.round(value * 10) / 10;
const timing = (t: Timing) => `min ${t.minMs} ms, median ${t.medianMs} ms, max ${t.maxMs} ms`;

export function describeBigSale(f: BigSaleFigures): string {
  return [
    `${f.buyers} orders (${f.liveBuyers} live buyers; filled in ${f.fillSeconds} s):`,
    `  stats: ${timing(f.stats)}; after the reconcile ${timing(f.statsLater)} (the GROUP BY before: ${timing(f.groupByBefore)})`,
    `  rows MySQL read: stats ${f.rowsRead.stats}, the GROUP BY before ${f.rowsRead.groupByBefore}`,
    `  reconcile: ${f.reconcile.seconds} s, peak RSS ${f.reconcile.peakRssMb} MB${f.reconcile.liveHeapMaxMb === null ? '' : ` (live heap at most ${f.reconcile.liveHeapMaxMb} MB)`}, longest Redis command ${(f.reconcile.longestRedisCommand.micros / 1000).toFixed(2)} ms (${f.reconcile.longestRedisCommand.command})`,
    `  its five longest: ${f.reconcile.top.join('; ')}`,
    `  buyers' HSETs: ${f.reconcile.hsetMicros.count}, median ${f.reconcile.hsetMicros.median} µs, p99 ${f.reconcile.hsetMicros.p99} µs, longest ${f.reconcile.hsetMicros.max} µs (an O(1) PEXPIRE beside them: median ${f.reconcile.pexpireMicros.median} µs, longest ${f.reconcile.pexpireMicros.max} µs)`,
    `  DEL of the buyers hash (what the rebuild script ran before UNLINK): ${f.delOfBuyersHashMs} ms`,
  ].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseCommandLine(COMMAND);
  const sizes = values.buyers.split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 10_000_000))
    exitWithUsage(COMMAND, `--buyers must be whole numbers from 1 to 10,000,000, not ${values.buyers}`);
  const heapMb = values['reconciler-heap-mb'] === undefined ? undefined : Number(values['reconciler-heap-mb']);
  if (heapMb !== undefined && !(Number.isInteger(heapMb) && heapMb >= 16))
    exitWithUsage(COMMAND, `--reconciler-heap-mb must be a whole number of MB, at least 16, not ${values['reconciler-heap-mb']}`);
  const nodeArgs = [
    ...(heapMb === undefined ? [] : [`--max-old-space-size=${heapMb}`]),
    ...(values['live-heap'] ? ['--expose-gc', '--import', fileURLToPath(new URL('./live-heap.mjs', import.meta.url))] : []),
  ];
  const figures: BigSaleFigures[] = [];
  for (const size of sizes) {
    const measured = await measureSize(size, values.mysql, values['reconciler-root'], nodeArgs);
    console.log(describeBigSale(measured));
    figures.push(measured);
  }
  console.log(JSON.stringify(figures));
}
