/**
 * `npm run bench:order-ids -- [--orders N] [--chunk N]`: what the kind of reservation id costs MariaDB as
 * the orders table grows. Two sales in two databases of one mariadbd started for the run (the bench's
 * settings: InnoDB's defaults, a 128 MiB buffer pool, `innodb_flush_log_at_trx_commit=1`), each written
 * by the workers' own path (`writeOrderBatch`: the `write_new_orders` procedure, batches of the workers'
 * default size) with buyers in no order, as a crowd comes; one sale's ids are random (a version 4 uuid,
 * as they were), the other's are made by `newReservationId` (a version 7: time first). The two are
 * written in alternated chunks, so that both meet the same buffer pool, the same box and the same hour;
 * for each chunk, mariadbd's CPU (utime + stime from /proc) per order and the wall time per order.
 */
import { randomUUID } from 'node:crypto';
import { createConnection } from 'mariadb';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { newReservationId, type Reservation } from '@flashsale/domain';
import { createOrderStore, createPrisma, migrate } from '@flashsale/order-store';
import { startMariaDbServer } from '@flashsale/harness';
import { cpuSeconds } from './servers.ts';
import { mariadbPidOf } from './pipeline-servers.ts';

const COMMAND = {
  usage: `usage: npm run bench:order-ids -- [--orders N] [--chunk N]

Writes N orders (default 1000000) of each of two sales through the workers' batch writer, in chunks
alternated between the two, on a mariadbd of its own: one sale with random reservation ids (uuid v4),
one with this checkout's (uuid v7, time first). Prints mariadbd's CPU and the wall time per order for
each chunk, and the totals.`,
  options: {
    orders: { type: 'string', default: '1000000' },
    chunk: { type: 'string', default: '50000' },
  },
} as const;

const { values } = parseCommandLine(COMMAND);
const ORDERS = Number(values.orders);
const CHUNK = Number(values.chunk);
if (!Number.isInteger(ORDERS) || ORDERS < 1) exitWithUsage(COMMAND, `--orders must be a positive integer, not ${values.orders}`);
if (!Number.isInteger(CHUNK) || CHUNK < 1 || CHUNK > ORDERS)
  exitWithUsage(COMMAND, `--chunk must be a positive integer up to --orders, not ${values.chunk}`);
const BATCH = loadConfig().WORKER_BATCH_SIZE;

const kinds = {
  random: (saleId: number) => `${saleId}-${randomUUID()}`,
  'time-ordered': newReservationId,
} as const;
type Kind = keyof typeof kinds;

const server = await startMariaDbServer();
try {
  const admin = await createConnection({ host: '127.0.0.1', port: server.port, user: 'root', password: '' });
  const pid = await mariadbPidOf(admin);
  const sides = await Promise.all(
    (Object.keys(kinds) as Kind[]).map(async (kind, i) => {
      const url = server.url(`order_ids_${i}`);
      await migrate(url);
      const prisma = createPrisma(url, 2);
      const sale = await createOrderStore(prisma).insertSale({
        name: `order ids ${kind}`,
        stock: ORDERS,
        perUserLimit: 1,
        startsAt: new Date(Date.now() - 1000),
        endsAt: new Date(Date.now() + 86_400_000),
      });
      return { kind, prisma, sale, written: 0, cpu: 0, wall: 0 };
    }),
  );
  console.log(`mariadbd ${pid}; ${ORDERS} orders a sale in chunks of ${CHUNK}, batches of ${BATCH}; us per order`);
  console.log('| orders in the table | random: mariadbd CPU | wall | time-ordered: mariadbd CPU | wall |');
  console.log('|---|---|---|---|---|');
  for (let chunk = 0; chunk * CHUNK < ORDERS; chunk += 1) {
    const size = Math.min(CHUNK, ORDERS - chunk * CHUNK);
    const line: string[] = [];
    // Alternated: whichever goes second meets the pages the first left in the buffer pool.
    for (const side of chunk % 2 === 0 ? sides : [...sides].reverse()) {
      const cpuBefore = cpuSeconds(pid);
      const started = performance.now();
      for (let done = 0; done < size; done += BATCH) {
        const now = Date.now();
        const batch: Reservation[] = [];
        for (let i = done; i < Math.min(size, done + BATCH); i += 1) {
          const n = side.written + i;
          // Buyers in no order (Knuth's multiplicative hash of the count): a crowd, not a queue.
          batch.push({
            reservationId: kinds[side.kind](side.sale.id),
            saleId: side.sale.id,
            userId: `buyer-${(n * 2654435761) % 4294967296}`,
            quantity: 1,
            reservedAt: now,
            generation: side.sale.generation,
          });
        }
        const outcome = await createOrderStore(side.prisma).sale(side.sale.id).writeOrderBatch(batch);
        if (outcome.written.length !== batch.length)
          throw new Error(`${side.kind}: ${outcome.written.length} of ${batch.length} orders written`);
      }
      side.written += size;
      const cpu = (cpuSeconds(pid) - cpuBefore) * 1e6;
      const wall = (performance.now() - started) * 1000;
      side.cpu += cpu;
      side.wall += wall;
      line[side.kind === 'random' ? 0 : 1] = `${(cpu / size).toFixed(1)} | ${(wall / size).toFixed(1)}`;
    }
    console.log(`| ${sides[0]!.written.toLocaleString('en-US')} | ${line.join(' | ')} |`);
  }
  // The statistics information_schema reads are refreshed by ANALYZE, not by the writes.
  for (let i = 0; i < sides.length; i += 1) await admin.query(`ANALYZE TABLE order_ids_${i}.orders`);
  const sizes = await admin.query<{ db: string; index_mb: number }[]>(
    "SELECT table_schema AS db, ROUND(index_length / 1048576) AS index_mb FROM information_schema.tables WHERE table_name = 'orders' AND table_schema LIKE 'order_ids_%' ORDER BY table_schema",
  );
  for (const side of sides)
    console.log(
      `${side.kind}: ${(side.cpu / side.written).toFixed(1)} us of mariadbd CPU and ${(side.wall / side.written).toFixed(1)} us of wall time per order over ${side.written} orders`,
    );
  console.log(`secondary indexes: ${sizes.map((s, i) => `${sides[i]!.kind} ${s.index_mb} MiB`).join(', ')}`);
  const [random, ordered] = sides;
  console.log(
    `time-ordered ids: mariadbd CPU per order ${(random!.cpu / ordered!.cpu).toFixed(2)}x lower, wall time ${(random!.wall / ordered!.wall).toFixed(2)}x lower`,
  );
  await Promise.all(sides.map((side) => side.prisma.$disconnect()));
  await admin.end();
} finally {
  await server.stop();
}
