import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { loadConfig, type Config } from '@flashsale/config';
import { createRedis, redisNow, redisTargetOf, type ScriptedRedis, createSaleStore, type SaleStore } from '@flashsale/redis-store';
import { startRedisServer, testDatabaseName, testRedisPrefix, type RedisServer } from '@flashsale/harness';
import { createOrderStore, createPrisma, migrate, poolConfigFromUrl, type PrismaClient, type SaleRecord } from '@flashsale/order-store';
import { createConnection } from 'mariadb';
import { salesOf } from '@flashsale/bootstrap';
import { createLogger, type Logger } from '@flashsale/runtime';
import type { Sales } from '@flashsale/sales';
import type { RebuyRule } from '@flashsale/domain';

export interface TestContext {
  config: Config;
  redis: ScriptedRedis;
  /** `redis` bound to this context's prefix (REDIS_PREFIX). */
  store: SaleStore;
  prisma: PrismaClient;
  /** The use cases over this context's stores, as a process's bootstrap builds them. */
  sales: Sales;
  /** Deletes every key under this context's prefix and closes the clients. */
  close(): Promise<void>;
}

export function createTestContext(overrides: NodeJS.ProcessEnv = {}): TestContext {
  const config = loadConfig({ ...process.env, REDIS_PREFIX: testRedisPrefix(), ...overrides });
  const redis = createRedis(redisTargetOf(config));
  // A test's own queries wait for a connection as long as a busy machine needs: the pool's 2 s is not
  // what any test is about.
  const prisma = createPrisma(config.DATABASE_URL, 4, 0, { acquireTimeoutMs: 60_000 });
  const store = createSaleStore(redis, config.REDIS_PREFIX);
  return {
    config,
    redis,
    store,
    prisma,
    sales: salesOf(config, createLogger('test', 'silent'), { redis, prisma }),
    async close() {
      // One server or each master of a cluster.
      await store.deleteAllKeys();
      await redis.quit();
      await prisma.$disconnect();
    },
  };
}

/** The use cases over `ctx`'s stores, or over a client, pool or prefix a test puts in their place. */
export function salesWith(
  ctx: TestContext,
  {
    redis = ctx.redis,
    prisma = ctx.prisma,
    prefix = ctx.config.REDIS_PREFIX,
    logger = createLogger('test', 'silent'),
  }: { redis?: ScriptedRedis; prisma?: PrismaClient; prefix?: string; logger?: Logger } = {},
): Sales {
  return salesOf({ ...ctx.config, REDIS_PREFIX: prefix }, logger, { redis, prisma });
}

/** A value the hooks set for the running test; read outside a test, an error. */
function running<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('no test is running');
  return value;
}

/** Registers vitest hooks giving the file's tests one context, made before the first and closed after the last. */
export function contextPerFile(overrides: NodeJS.ProcessEnv = {}): { readonly ctx: TestContext } {
  let current: TestContext | undefined;
  beforeAll(() => {
    current = createTestContext(overrides);
  });
  afterAll(async () => {
    await current?.close();
  });
  return {
    get ctx() {
      return running(current);
    },
  };
}

/**
 * A context with a database of its own, migrated now and dropped on close. For tests of what looks at
 * every sale in MySQL (the reconciler): in the shared test database it would see every other test's sales.
 */
export async function createIsolatedContext(overrides: NodeJS.ProcessEnv = {}): Promise<TestContext> {
  const shared = new URL(process.env.DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale_test');
  const own = new URL(shared);
  own.pathname = `/${testDatabaseName('iso')}`;
  await migrate(own.toString());
  const ctx = createTestContext({ DATABASE_URL: own.toString(), ...overrides });
  return {
    ...ctx,
    async close() {
      await ctx.close();
      const { database, ...server } = poolConfigFromUrl(own.toString());
      const connection = await createConnection(server);
      await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await connection.end();
    },
  };
}

/** Milliseconds on Redis's clock, the one the reserve script judges sale windows by. */
export { redisNow };

export interface SaleOptions {
  stock?: number;
  perUserLimit?: number;
  /** Start, in ms relative to Redis's clock now (default: a minute ago). */
  startsIn?: number;
  /** End, in ms relative to Redis's clock now (default: in an hour). */
  endsIn?: number;
  name?: string;
  /** Seconds a winner has to pay (MySQL's default, 900, when not given). */
  paymentWindowSeconds?: number;
  /** The rebuy rule (MySQL's defaults, the built-in rule, when not given). */
  rebuyRule?: RebuyRule;
}

/** A sale in MySQL and live in Redis, published exactly as the admin endpoint does. */
export async function createLiveSale(ctx: TestContext, options: SaleOptions = {}): Promise<SaleRecord> {
  const now = await redisNow(ctx.redis);
  const sale = await createOrderStore(ctx.prisma).insertSale({
    name: options.name ?? 'Test sale',
    stock: options.stock ?? 10,
    perUserLimit: options.perUserLimit ?? 1,
    startsAt: new Date(now + (options.startsIn ?? -60_000)),
    endsAt: new Date(now + (options.endsIn ?? 3_600_000)),
    ...(options.paymentWindowSeconds !== undefined && { paymentWindowSeconds: options.paymentWindowSeconds }),
    ...(options.rebuyRule && { rebuyRule: options.rebuyRule }),
  });
  await ctx.store.publish(sale, sale.generation);
  return sale;
}

/**
 * Registers vitest hooks giving each test of the file its own isolated context (its own database), and
 * a list of stops run in reverse order after the test, before the context closes.
 */
export function isolatedContextPerTest(): { readonly ctx: TestContext; readonly stops: (() => Promise<void>)[] } {
  let current: TestContext | undefined;
  let stops: (() => Promise<void>)[] = [];
  beforeEach(async () => {
    current = await createIsolatedContext();
    stops = [];
  });
  afterEach(async () => {
    for (const stop of stops.reverse()) await stop();
    await current?.close();
  });
  return {
    get ctx() {
      return running(current);
    },
    get stops() {
      return stops;
    },
  };
}

/**
 * Registers vitest hooks giving the file's tests a redis-server of their own (started before the first,
 * stopped after the last) and an isolated context on it: the server's command counts (INFO
 * commandstats) are then the file's work only.
 */
export function isolatedContextOnOwnRedis(): { readonly ctx: TestContext; readonly server: RedisServer } {
  let server: RedisServer | undefined;
  let current: TestContext | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
    current = await createIsolatedContext({ REDIS_URL: server.url });
  });
  afterAll(async () => {
    await current?.close();
    await server?.stop();
  });
  return {
    get ctx() {
      return running(current);
    },
    get server() {
      return running(server);
    },
  };
}
