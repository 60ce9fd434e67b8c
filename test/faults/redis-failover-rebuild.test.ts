import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createConnection, type Connection } from 'mariadb';
import {
  askRedis,
  createHttpClient,
  mapConcurrently,
  signBuyerTokens,
  tcpPortsOfGroup,
  type BurstOutcome,
  type RedisSentinels,
  type RedisServer,
} from '@flashsale/harness';
import { createOrderStore, LIVE_BUYERS_PER_PAGE, LIVE_ORDER_STATUSES, poolConfigFromUrl } from '@flashsale/order-store';
import { saleKeys } from '@flashsale/redis-store';
import { startSentinelSystem, type SentinelSystem } from '../support/system.ts';
import { burst, buyUntilAnswered, expectLedger, sellOn } from '../support/sentinel-sales.ts';
import { convergedOnPrimary } from '../support/converged.ts';
import { until } from '../support/until.ts';

// A Redis Sentinel failover in the middle of the reconciler's rebuild of a sale, on real servers (a
// primary, two replicas, three redis-sentinel processes) and real gateway, worker and reconciler processes.
//
// The sale: 100 buyers bought through the gateways, then MySQL gained 12,000 orders the Redis state does
// not know (MySQL changed): the audit finds the drift and the reconciler rebuilds the sale from MySQL:
// 12,100 buyers read in three pages (LIVE_BUYERS_PER_PAGE, sale-ledger.ts) and written aside a chunk at a
// time (BUYERS_PER_CALL, buyer-record.ts), switched in by rebuild-sale-6.lua, resumed.
//
// The test puts the failover exactly where it wants it, whatever the machine's load, with locks the
// rebuild waits for: the sale's row in MySQL (its generation switch and its checkpoint wait for it), the
// stock_returns table (the switch's settling of returns, after its last read of Redis, waits for it), the
// orders table (each page of buyers waits for it), the reconciliation's own named lock (its start waits
// for it), and the primary's writes (CLIENT PAUSE WRITE, every client's: the rebuild's next write waits,
// and nothing it has written changes meanwhile). A replica that must miss the primary's last writes is cut
// off from it (its link killed and refused again until the primary is dead): as far behind as an
// asynchronous replica can be at a failover. The primary is then killed (SIGKILL) or frozen (SIGSTOP).
//
// In the first three cases, whatever the point, from the rebuild's pause to the end: the sale is never
// open on the primary the sentinels name with a state other than MySQL's (remaining = stock - units in
// orders, every buyer with an order recorded), the reconciler alone rebuilds and resumes it on the new
// primary, every buyer who holds an order is answered ALREADY_PURCHASED with their reservation id,
// selling goes on, and the ledger holds.
//
// The last case holds a reconciliation earlier, before its generation switch, with nothing seeded: the
// failover takes the sale to a replica its pause never reached, which sells; nothing it sold is lost.

let system: SentinelSystem | undefined;
let cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  cleanups = [];
  await system?.stop();
  system = undefined;
});

/** Buyers per page the rebuild reads from MySQL. */
const PAGE = LIVE_BUYERS_PER_PAGE;
const BEFORE = 100;
/** Orders MySQL gains behind Redis's back: with the 100 bought, three pages of buyers for the rebuild (5,000, 5,000, 2,100). */
const SEEDED = 2 * PAGE + 2000;
const STOCK = BEFORE + SEEDED + 300;
/** How long one hold of the primary's writes lasts at most, should the test die holding it. */
const HOLD_MS = 60_000;
/** A password the primary does not have: a replica told to use it cannot connect to it again. */
const CUT_OFF = 'not-the-primary-password';

/** Runs `command` on a connection of its own to one redis-server, closed after (a busy machine's connect given 5 s). */
const ask = <T>(server: RedisServer, command: (redis: Redis) => Promise<T>): Promise<T> => askRedis(server.url, command, 5000);

/** One field of an INFO reply. */
const infoField = (info: string, field: string) => new RegExp(`^${field}:(.*?)\\s*$`, 'm').exec(info)?.[1];

/** What the test sees of the sale on one server: its generation, the reconciler's pause, the next buyers written aside. */
interface Look {
  generation: string | null;
  paused: boolean;
  nextBuyers: number;
}

/**
 * A connection of the test's own to the primary that holds every client's writes (CLIENT PAUSE WRITE, in
 * the same transaction as its look at the sale: what it sees stays so until it lets go). Reads go on.
 * The sentinels' PUBLISH of hello messages is a write too, and their PING waits behind it: while the gate
 * is held, they are told to count the primary down only after far longer than a hold lasts, or a busy
 * machine's hold would bring a failover the test did not ask for; once it lets go, their own time is back.
 */
function writeGate(sentinels: RedisSentinels, server: RedisServer, prefix: string, saleId: number) {
  const redis = new Redis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  const keys = saleKeys(prefix, saleId);
  const gate = {
    async hold(): Promise<Look> {
      await sentinels.setDownAfter(10 * HOLD_MS);
      const replies = await redis
        .multi()
        .call('CLIENT', 'PAUSE', String(HOLD_MS), 'WRITE')
        .hlen(keys.nextBuyers)
        .hmget(keys.meta, 'gen', 'paused')
        .exec();
      if (!replies) throw new Error('the gate transaction was discarded');
      for (const [error] of replies) if (error) throw error;
      const [generation, paused] = replies[2]![1] as (string | null)[];
      return { generation: generation ?? null, paused: paused === '1', nextBuyers: Number(replies[1]![1]) };
    },
    async release() {
      await redis.call('CLIENT', 'UNPAUSE');
      await sentinels.setDownAfter();
    },
    /** Looks without holding anything. */
    async look(): Promise<Look> {
      const [[generation, paused], nextBuyers] = await Promise.all([redis.hmget(keys.meta, 'gen', 'paused'), redis.hlen(keys.nextBuyers)]);
      return { generation: generation ?? null, paused: paused === '1', nextBuyers };
    },
    close: () => redis.disconnect(),
  };
  return gate;
}

/** Until every replica has received what the primary has written (its offset at the call). */
async function caughtUp(primary: RedisServer, replicas: RedisServer[]) {
  const target = Number(infoField(await ask(primary, (r) => r.info('replication')), 'master_repl_offset'));
  for (const replica of replicas) {
    await until(
      async () => Number(infoField(await ask(replica, (r) => r.info('replication')), 'slave_repl_offset')),
      (offset) => offset >= target,
      30_000,
    );
  }
}

/** The replicas' link to the primary cut, and refused again: nothing the primary writes from now on reaches them. */
async function cutOff(replicas: RedisServer[]) {
  for (const replica of replicas) {
    await ask(replica, async (r) => {
      await r.config('SET', 'masterauth', CUT_OFF);
      await r.call('CLIENT', 'KILL', 'TYPE', 'master');
    });
  }
  for (const replica of replicas) {
    await until(
      async () => infoField(await ask(replica, (r) => r.info('replication')), 'master_link_status'),
      (status) => status === 'down',
      30_000,
    );
  }
}

/** The replicas may connect again (to whichever primary the sentinels give them). */
async function reconnect(replicas: RedisServer[]) {
  for (const replica of replicas) await ask(replica, (r) => r.config('SET', 'masterauth', ''));
}

/** How far each replica is behind the primary, in bytes of replication stream. */
async function replicasBehind(primary: RedisServer, replicas: RedisServer[]): Promise<number[]> {
  const offset = Number(infoField(await ask(primary, (r) => r.info('replication')), 'master_repl_offset'));
  return Promise.all(
    replicas.map(async (replica) => offset - Number(infoField(await ask(replica, (r) => r.info('replication')), 'slave_repl_offset'))),
  );
}

/** A MySQL connection of the test's own to the system's database (closed after the test). */
async function mysqlConnection(s: SentinelSystem): Promise<Connection> {
  const { host, port, user, password, database } = poolConfigFromUrl(s.ctx.config.DATABASE_URL);
  const connection = await createConnection({ host, port, user, password, database, connectTimeout: 30_000 });
  cleanups.push(() => connection.end());
  return connection;
}

/** The sale's row in MySQL, read on a connection of the test's own. */
async function saleRow(mysql: Connection, saleId: number) {
  const [row] = await mysql.query<{ redis_generation: string; checkpoint_at: Date | null }[]>(
    'SELECT redis_generation, checkpoint_at FROM sales WHERE id = ?',
    [saleId],
  );
  return row!;
}

/**
 * Orders MySQL holds that the Redis state does not (as if MySQL had changed): written the way a worker
 * writes them, under the sale's current generation. Returned as 202s for the ledger.
 */
async function ordersBehindRedis(s: SentinelSystem, saleId: number): Promise<BurstOutcome> {
  const { prisma } = s.ctx;
  const { redisGeneration } = await prisma.sale.findUniqueOrThrow({ where: { id: saleId } });
  const accepted = new Map<string, { userId: string; quantity: number }>();
  for (let first = 0; first < SEEDED; first += 1000) {
    const batch = Array.from({ length: Math.min(1000, SEEDED - first) }, (_, i) => ({
      reservationId: `${saleId}-${randomUUID()}`,
      saleId,
      userId: `mysql-${first + i}`,
      quantity: 1,
      reservedAt: Date.now(),
      generation: redisGeneration!,
    }));
    const outcome = await createOrderStore(prisma).sale(saleId).writeOrderBatch(batch);
    expect(outcome.written.length).toBe(batch.length);
    for (const r of batch) accepted.set(r.reservationId, { userId: r.userId, quantity: r.quantity });
  }
  return { accepted, refused: {}, unknown: new Set(), failed: new Set() };
}

/** The sale's live orders in MySQL: buyer -> reservation id. */
async function holders(s: SentinelSystem, saleId: number): Promise<Map<string, string>> {
  const orders = await s.ctx.prisma.order.findMany({
    where: { saleId, status: { in: [...LIVE_ORDER_STATUSES] } },
    select: { userId: true, reservationId: true },
  });
  return new Map(orders.map((o) => [o.userId, o.reservationId]));
}

/**
 * Looks at the sale on the primary the sentinels name, as often as it can, from the rebuild's pause until
 * stopped: whenever the sale is open (neither pause set), its state must be MySQL's, which nothing
 * changes meanwhile (no purchase is made).
 */
function watchWhileOpen(s: SentinelSystem, saleId: number, expected: { remaining: number; buyers: number }) {
  const keys = saleKeys(s.ctx.config.REDIS_PREFIX, saleId);
  const seen = {
    looks: 0,
    open: 0,
    wrong: [] as { remaining: number; buyers: number; generation: string | null; server: string | undefined }[],
  };
  let stopped = false;
  const watching = (async () => {
    while (!stopped) {
      try {
        const replies = await s.ctx.redis
          .multi()
          .hmget(keys.meta, 'paused', 'op_paused', 'remaining', 'gen')
          .hlen(keys.buyers)
          .info('server')
          .exec();
        if (!replies || replies.some(([error]) => error)) throw new Error('look failed');
        const [paused, operatorPaused, remaining, generation] = replies[0]![1] as (string | null)[];
        const buyers = Number(replies[1]![1]);
        seen.looks++;
        if (paused === '0' && operatorPaused !== '1') {
          seen.open++;
          if (Number(remaining) !== expected.remaining || buyers !== expected.buyers) {
            seen.wrong.push({
              remaining: Number(remaining),
              buyers,
              generation: generation ?? null,
              server: infoField(String(replies[2]![1]), 'tcp_port'),
            });
          }
        }
        await sleep(2);
      } catch {
        // The primary is away (the failover): looked at again once the client found the next one.
        await sleep(50);
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await watching;
      return seen;
    },
  };
}

/** Every buyer in `buyers` asks to buy again, through the gateways in turn: what they are answered, when not 409 ALREADY_PURCHASED with their own reservation. */
async function buyAgain(s: SentinelSystem, saleId: number, buyers: Map<string, string>) {
  const users = [...buyers.keys()];
  const tokens = signBuyerTokens(users);
  const clients = s.gateways.map((g) => createHttpClient(g.url, 8));
  try {
    const answers = await mapConcurrently(
      users.map((userId, i) => ({ userId, token: tokens[i]! })),
      16,
      async ({ userId, token }) => {
        const client = clients[userId.length % clients.length]!;
        const res = await client.send('POST', `/api/sales/${saleId}/purchase`, {
          headers: { authorization: `Bearer ${token}` },
          body: { quantity: 1 },
        });
        const right = res.status === 409 && res.body.code === 'ALREADY_PURCHASED' && res.body.reservationId === buyers.get(userId);
        return right ? null : { userId, status: res.status, body: res.body };
      },
    );
    return answers.filter((a) => a !== null);
  } finally {
    for (const c of clients) c.close();
  }
}

/**
 * Redis holds every buyer with an order (`live`: buyer -> reservation id), with its reservation, and no
 * other; each of them buying again is refused 409 ALREADY_PURCHASED with their own reservation.
 */
async function expectHoldersKnown(s: SentinelSystem, saleId: number, live: Map<string, string>) {
  const recorded = await s.ctx.redis.hgetall(saleKeys(s.ctx.config.REDIS_PREFIX, saleId).buyers);
  const misrecorded = [...live].filter(([userId, reservationId]) => recorded[userId]?.split('|')[0] !== reservationId);
  expect({ misrecorded, buyers: Object.keys(recorded).length }).toEqual({ misrecorded: [], buyers: live.size });
  expect(await buyAgain(s, saleId, live)).toEqual([]);
}

/**
 * How many statements of this system's reconciler whose text is like `pattern` MySQL is running now
 * (waiting on a lock of the test's, here). The reconciler's alone, told by its connections' ports: the
 * server and its database are shared with every other test file running beside this one, whose
 * reconcilers run the same statements for their own sales (one recording a checkpoint once let this test
 * go on before its own rebuild had got there).
 */
async function running(mysql: Connection, pattern: string): Promise<number> {
  const ports = [...tcpPortsOfGroup(system!.reconciler!.child.pid!, poolConfigFromUrl(system!.ctx.config.DATABASE_URL).port)];
  if (ports.length === 0) return 0;
  const [row] = await mysql.query<{ running: bigint }[]>(
    `SELECT COUNT(*) AS running FROM information_schema.PROCESSLIST
      WHERE INFO LIKE ? AND CAST(SUBSTRING_INDEX(HOST, ':', -1) AS UNSIGNED) IN (${ports.map(() => '?').join(', ')})`,
    [pattern, ...ports],
  );
  return Number(row!.running);
}

/** The rebuild's statements the test waits for, as MySQL shows them. */
const WAITING_FOR_THE_ROW = 'SELECT id FROM sales WHERE id = % FOR UPDATE';
const READING_A_PAGE = '%FROM orders FORCE INDEX (orders_sale_id_live_user_id_key)%';
const RECORDING_THE_CHECKPOINT = 'UPDATE%sales%checkpoint_at%';
const SETTLING_RETURNS = 'UPDATE stock_returns SET state = %rebuilt%';

/** The system (two gateways, a worker, the reconciler with `reconcilerEnv`) and a sale 100 buyers bought through the gateways, their orders written, the reconciler caught up. */
async function boughtThroughGateways(stock: number, reconcilerEnv: NodeJS.ProcessEnv = {}) {
  system = await startSentinelSystem({ gateways: 2, workers: 1, reconcilerEnv });
  const s = system;
  const saleId = await s.createSale({ stock });
  const before = await burst(s, saleId, 'before', BEFORE);
  expect(before.accepted.size).toBe(BEFORE);
  await until(
    () => s.ctx.prisma.order.count({ where: { saleId } }),
    (n) => n === BEFORE,
  );
  await convergedOnPrimary(s, saleId);
  const old = await s.sentinels.primary();
  return { s, saleId, before, old, replicas: s.sentinels.servers.filter((server) => server.port !== old.port) };
}

/**
 * The sale as every case starts it: 100 buyers through the gateways, written as orders; the reconciler
 * caught up; then MySQL gains 12,000 orders Redis does not know, while the test holds the sale's
 * reconciliation lock (withSaleLock: the attempts the audit's drift asks for fail at once, before any
 * pause, and are retried). The test then locks the sale's row and lets the reconciliation in: returned
 * once it has paused the sale and drained, waiting for the row to switch the generation.
 */
async function rebuildUnderWay() {
  // The audit leaves a sale whose Redis state has not changed since a clean audit alone for
  // RECONCILER_AUDIT_IDLE_MS (10 minutes by default); here MySQL changes behind an idle Redis state, and
  // the audit is to find it within a second or two.
  const { s, saleId, before, old, replicas } = await boughtThroughGateways(STOCK, { RECONCILER_AUDIT_IDLE_MS: '1000' });
  const prefix = s.ctx.config.REDIS_PREFIX;
  const gate = writeGate(s.sentinels, old, prefix, saleId);
  cleanups.push(async () => gate.close());
  // The row's lock, the orders table's and stock_returns', a connection that watches what MySQL runs, and
  // one for the reconciliation's named lock.
  const [row, table, returns, watching, named] = [
    await mysqlConnection(s),
    await mysqlConnection(s),
    await mysqlConnection(s),
    await mysqlConnection(s),
    await mysqlConnection(s),
  ];
  cleanups.push(() => returns.query('UNLOCK TABLES'));
  const oldGeneration = (await saleRow(watching, saleId)).redis_generation;
  const oldHistory = infoField(await ask(old, (c) => c.info('replication')), 'master_replid');

  const reconciliation = `flashsale:${poolConfigFromUrl(s.ctx.config.DATABASE_URL).database}:reconcile:${saleId}`;
  expect(Number((await named.query<{ got: bigint }[]>('SELECT GET_LOCK(?, 0) AS got', [reconciliation]))[0]!.got)).toBe(1);
  const seeded = await ordersBehindRedis(s, saleId);
  const live = await holders(s, saleId);
  expect(live.size).toBe(BEFORE + SEEDED);
  await row.beginTransaction();
  await row.query('SELECT id FROM sales WHERE id = ? FOR UPDATE', [saleId]);
  await named.query('SELECT RELEASE_LOCK(?)', [reconciliation]);
  await until(
    () => running(watching, WAITING_FOR_THE_ROW),
    (n) => n > 0,
    60_000,
  );
  expect(await gate.look()).toEqual({ generation: oldGeneration, paused: true, nextBuyers: 0 });
  // Nothing is bought from here to the end of the fault: whenever open, the sale must show this.
  const monitor = watchWhileOpen(s, saleId, { remaining: STOCK - live.size, buyers: live.size });
  cleanups.push(() => monitor.stop());
  return { s, saleId, old, replicas, gate, row, table, returns, watching, oldGeneration, oldHistory, before, seeded, live, monitor };
}

type Rebuild = Awaited<ReturnType<typeof rebuildUnderWay>>;

/**
 * Lets the rebuild switch the generation in MySQL, the primary's writes held: it then waits to write
 * its first to Redis. Returns the new generation.
 *
 * The writes are held only once the rebuild has read Redis for the last time before its switch (with the
 * row locked: the state it replaces), while it waits for the stock_returns table, its last statement but
 * one: a read waits behind any write sent before it on the same connection (the reconciler's watch
 * writes now and then), and would wait for the end of the hold, which waits for the switch.
 */
async function switchInMysql(r: Rebuild): Promise<string> {
  await r.returns.query('LOCK TABLES stock_returns WRITE');
  await r.row.commit();
  await until(
    () => running(r.watching, SETTLING_RETURNS),
    (n) => n > 0,
    60_000,
  );
  await r.gate.hold();
  await r.returns.query('UNLOCK TABLES');
  const { redis_generation: generation } = await until(
    () => saleRow(r.watching, r.saleId),
    (sale) => sale.redis_generation !== r.oldGeneration,
    60_000,
  );
  return generation;
}

/**
 * Holds the rebuild where it records its checkpoint: after its switch in Redis, before its resume. Once
 * the rebuild has switched the generation in MySQL (the primary's writes held, so it can go no further),
 * the test locks the sale's row again and lets the writes go: the rebuild writes its buyers, switches them
 * in, and its checkpoint waits for the row (nothing else it does writes that row). Returns the rebuilt
 * generation and `resume`, which lets the checkpoint through: the resume is then the rebuild's next write.
 */
async function holdAtCheckpoint(r: Rebuild) {
  const generation = await switchInMysql(r);
  await r.row.beginTransaction();
  await r.row.query('SELECT id FROM sales WHERE id = ? FOR UPDATE', [r.saleId]);
  await r.gate.release();
  await until(
    () => running(r.watching, RECORDING_THE_CHECKPOINT),
    (n) => n > 0,
    60_000,
  );
  expect(await r.gate.look()).toEqual({ generation, paused: true, nextBuyers: 0 });
  return {
    generation,
    async resume() {
      await r.row.commit();
      await until(
        () => saleRow(r.watching, r.saleId),
        (sale) => sale.checkpoint_at !== null,
        60_000,
      );
    },
  };
}

/**
 * The rebuild is waiting for the orders table, to read a page of buyers: lets that page through and no
 * further (the primary's writes held while the page is read, so that the next page cannot be asked for
 * before the table is locked again). Returns the buyers written aside once the rebuild waits for the next
 * page.
 */
async function onePage(r: Rebuild): Promise<number> {
  await r.gate.hold();
  await r.table.query('UNLOCK TABLES');
  await until(
    () => running(r.watching, READING_A_PAGE),
    (n) => n === 0,
    60_000,
  );
  await r.table.query('LOCK TABLES orders WRITE');
  await r.gate.release();
  await until(
    () => running(r.watching, READING_A_PAGE),
    (n) => n > 0,
    60_000,
  );
  return (await r.gate.look()).nextBuyers;
}

/**
 * After the fault: the sentinels promote a replica, the reconciler rebuilds and resumes the sale there on
 * its own, and from the rebuild's pause to this point the sale was never open with a wrong state. Then
 * every buyer with an order is refused with their reservation, selling goes on, and the ledger holds.
 */
async function recovers(r: Rebuild) {
  const { s, saleId } = r;
  const converged = await convergedOnPrimary(s, saleId);
  const seen = await r.monitor.stop();
  // Looks at a sale open with another state than MySQL's: how many, and the first few.
  expect({ wrong: seen.wrong.length, first: seen.wrong.slice(0, 3) }).toEqual({ wrong: 0, first: [] });
  expect(seen.open).toBeGreaterThan(0);
  // Rebuilt and resumed in the promoted replica's history of writes, not the old primary's.
  expect(converged.primary).not.toBe(r.oldHistory);

  await expectHoldersKnown(s, saleId, r.live);

  const probes = await buyUntilAnswered(s, saleId);
  const rest = await sellOn(s, saleId, 'rest', 200);
  const { ledger, counted } = await expectLedger(s, saleId, [r.before, r.seeded, ...probes, ...rest], STOCK);
  expect({ lost: ledger.lost, counted }).toEqual({ lost: [], counted: 0 });
  // The reconciliation's attempts that failed, by the start of their error (those the test's hold on the
  // reconciliation lock failed included), for the record.
  const failedAttempts: Record<string, number> = {};
  for (const line of s.reconciler!.logs) {
    if (line.msg !== 'reconcile attempt failed; BullMQ retries it') continue;
    const why = String((line.err as { message?: string } | undefined)?.message).slice(0, 90);
    failedAttempts[why] = (failedAttempts[why] ?? 0) + 1;
  }
  return { seen, ledger, failedAttempts };
}

/**
 * A sale with buyers and a reconciliation of it asked for by an operator, held by the test where it waits
 * to lock the sale's row (after its pause, before its generation switch), the replicas cut off before the
 * pause: none of them holds it. Nothing is seeded behind Redis's back: MySQL and Redis agree.
 */
async function reconciliationAtTheRow() {
  const { s, saleId, before, old, replicas } = await boughtThroughGateways(1000);
  await caughtUp(old, replicas);
  await cutOff(replicas);
  cleanups.push(() => reconnect(replicas));
  const [row, watching] = [await mysqlConnection(s), await mysqlConnection(s)];
  await row.beginTransaction();
  await row.query('SELECT id FROM sales WHERE id = ? FOR UPDATE', [saleId]);
  const admin = createHttpClient(s.gateways[0]!.url, 1);
  cleanups.push(async () => admin.close());
  // Answered once the reconciliation is done, or not at all (its gateway may lose Redis meanwhile).
  void admin
    .send('POST', `/api/admin/sales/${saleId}/reconcile`, { headers: { authorization: `Bearer ${s.ctx.config.ADMIN_TOKEN}` } })
    .catch(() => undefined);
  await until(
    () => running(watching, WAITING_FOR_THE_ROW),
    (n) => n > 0,
    60_000,
  );
  const meta = saleKeys(s.ctx.config.REDIS_PREFIX, saleId).meta;
  expect(await ask(old, (c) => c.hget(meta, 'paused'))).toBe('1');
  return { s, saleId, old, replicas, row, before };
}

describe('a Redis Sentinel failover in the middle of a rebuild of a sale', () => {
  it('the primary SIGKILLed between two pages of buyers the rebuild writes aside, the replicas behind it: the promoted one holds the first page, the rebuild writes the last there; the sale never opens short of a buyer', async () => {
    const r = await rebuildUnderWay();
    const { s, gate, table, old, replicas } = r;
    const nextBuyers = saleKeys(s.ctx.config.REDIS_PREFIX, r.saleId).nextBuyers;
    // Each page of buyers waits for the orders table, locked by the test.
    await switchInMysql(r);
    await table.query('LOCK TABLES orders WRITE');
    cleanups.push(() => table.query('UNLOCK TABLES'));
    await gate.release();
    await until(
      () => running(r.watching, READING_A_PAGE),
      (n) => n > 0,
      60_000,
    );
    // The first page written aside, and held by the replicas...
    expect(await onePage(r)).toBe(PAGE);
    // The rebuild waits for the orders table: it writes nothing meanwhile.
    await caughtUp(old, replicas);
    await cutOff(replicas);
    cleanups.push(() => reconnect(replicas));
    // ...the second on the primary alone; the rebuild then waits for the third, with nothing in flight.
    expect(await onePage(r)).toBe(2 * PAGE);
    expect(await gate.look()).toMatchObject({ generation: r.oldGeneration, paused: true });
    expect(Math.min(...(await replicasBehind(old, replicas)))).toBeGreaterThan(0);

    // No failover but the test's own: the sentinels still name the primary it is about to kill.
    expect((await s.sentinels.primary()).port).toBe(old.port);
    await old.kill('SIGKILL');
    await reconnect(replicas);
    const promoted = await s.sentinels.waitForFailover(old);
    expect(await ask(promoted, (c) => c.hlen(nextBuyers))).toBe(PAGE);
    // The third page: written aside on the promoted replica, next to the first.
    await table.query('UNLOCK TABLES');

    const { seen, ledger, failedAttempts } = await recovers(r);
    console.info(
      `killed with ${2 * PAGE} of ${r.live.size} buyers written aside, the promoted replica holding ${PAGE}: failed attempts ${JSON.stringify(failedAttempts)}; ` +
        `${seen.open} looks at the open sale of ${seen.looks}, ${ledger.unitsInDb} units in orders, ${ledger.remaining} remaining`,
    );
  });

  it('the primary SIGKILLed after the rebuild switched the sale, before its checkpoint and resume, the switch never replicated: the promoted replica holds the old state, which is never opened', async () => {
    const r = await rebuildUnderWay();
    const { s, old, replicas } = r;
    // The replicas are cut off before the rebuild's first write (it waits for the sale's row): they hold
    // the paused old state.
    await caughtUp(old, replicas);
    await cutOff(replicas);
    cleanups.push(() => reconnect(replicas));
    const held = await holdAtCheckpoint(r);
    expect(Math.min(...(await replicasBehind(old, replicas)))).toBeGreaterThan(0);
    // No failover but the test's own: the sentinels still name the primary it is about to kill.
    expect((await s.sentinels.primary()).port).toBe(old.port);
    await old.kill('SIGKILL');
    await reconnect(replicas);
    const promoted = await s.sentinels.waitForFailover(old);
    const meta = saleKeys(s.ctx.config.REDIS_PREFIX, r.saleId).meta;
    expect(await ask(promoted, (c) => c.hmget(meta, 'gen', 'paused'))).toEqual([r.oldGeneration, '1']);
    // The checkpoint is recorded; the resume goes to the promoted replica.
    await held.resume();

    const { seen, ledger, failedAttempts } = await recovers(r);
    console.info(
      `killed before the resume, the switch not replicated: failed attempts ${JSON.stringify(failedAttempts)}; ${seen.open} looks at the open sale of ${seen.looks}, ` +
        `${ledger.unitsInDb} units in orders, ${ledger.remaining} remaining`,
    );
  });

  it('the primary frozen (SIGSTOP) after the rebuild switched the sale, before its checkpoint and resume, past the failover, the switch replicated, then let go: the sale is resumed on the promoted replica and rebuilt there', async () => {
    const r = await rebuildUnderWay();
    const { s, old, replicas } = r;
    const held = await holdAtCheckpoint(r);
    // Everything the rebuild wrote, its switch included, is on the replicas.
    await caughtUp(old, replicas);
    expect((await s.sentinels.primary()).port).toBe(old.port);
    old.freeze();
    cleanups.push(async () => old.thaw());
    const promoted = await s.sentinels.waitForFailover(old);
    const meta = saleKeys(s.ctx.config.REDIS_PREFIX, r.saleId).meta;
    expect(await ask(promoted, (c) => c.hmget(meta, 'gen', 'paused'))).toEqual([held.generation, '1']);
    // The checkpoint is recorded; the resume goes to the promoted replica.
    await held.resume();
    // Let go: it serves whatever still reaches it until the sentinels make it a replica of the promoted
    // one, which drops what it ran alone and closes its clients' connections.
    old.thaw();
    await until(
      () => ask(old, async (c) => (await c.role())[0]).catch(() => 'away'),
      (role) => role === 'slave',
      60_000,
    );

    const { seen, ledger, failedAttempts } = await recovers(r);
    console.info(
      `frozen before the resume, the switch replicated: failed attempts ${JSON.stringify(failedAttempts)}; ${seen.open} looks at the open sale of ${seen.looks}, ` +
        `${ledger.unitsInDb} units in orders, ${ledger.remaining} remaining`,
    );
  });

  it('the primary SIGKILLed after a reconciliation paused the sale, before its generation switch, the pause never replicated: the promoted replica sells, the reconciliation switches nothing there and starts over, and every 202 becomes an order', async () => {
    const { s, saleId, old, replicas, row, before } = await reconciliationAtTheRow();
    expect((await s.sentinels.primary()).port).toBe(old.port);
    await old.kill('SIGKILL');
    await reconnect(replicas);
    const promoted = await s.sentinels.waitForFailover(old);
    const meta = saleKeys(s.ctx.config.REDIS_PREFIX, saleId).meta;
    // The promoted replica never received the pause: the sale is open there, and sells.
    expect(await ask(promoted, (c) => c.hget(meta, 'paused'))).toBe('0');
    const during = await burst(s, saleId, 'during', 100);
    expect(during.accepted.size).toBeGreaterThan(0);
    // Their orders wait for the sale's row, as the reconciliation does, which has it first.
    await row.commit();

    await convergedOnPrimary(s, saleId);
    const probes = await buyUntilAnswered(s, saleId);
    const rest = await sellOn(s, saleId, 'rest', 100);
    const { ledger, counted } = await expectLedger(s, saleId, [before, during, ...probes, ...rest], 1000);
    expect({ lost: ledger.lost, counted }).toEqual({ lost: [], counted: 0 });
    await expectHoldersKnown(s, saleId, await holders(s, saleId));
    console.info(
      `killed before the generation switch, the pause not replicated: ${during.accepted.size} accepted on the promoted replica, ${ledger.unitsInDb} units in orders, ${ledger.remaining} remaining`,
    );
  });
});
