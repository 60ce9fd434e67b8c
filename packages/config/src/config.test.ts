import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEV_ADMIN_TOKEN, DEV_AUTH_SECRET, DEV_PAYMENT_WEBHOOK_SECRET, loadConfig } from './config.ts';

// Made at each run: a secret written here would be a published one, which production refuses.
const SECRET = randomBytes(32).toString('base64');
const ADMIN = randomBytes(16).toString('hex');

/** The variable each problem names (its first word), so a test states which variables were refused. */
function refusedVariables(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((problem) => problem.split(' ')[0]!);
  }
  throw new Error('expected loadConfig to throw a ConfigError');
}

describe('loadConfig', () => {
  it('applies every default when nothing is set', () => {
    expect(loadConfig({})).toEqual({
      NODE_ENV: 'development',
      DATABASE_URL: 'mysql://root@127.0.0.1:3306/flashsale',
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: 'fs',
      REDIS_SENTINEL_MASTER: 'mymaster',
      REDIS_WAIT_REPLICAS: 0,
      REDIS_WAIT_TIMEOUT_MS: 100,
      PORT: 3000,
      AUTH_SECRET: DEV_AUTH_SECRET,
      ADMIN_TOKEN: DEV_ADMIN_TOKEN,
      PAYMENT_WEBHOOK_SECRET: DEV_PAYMENT_WEBHOOK_SECRET,
      PAYMENT_WINDOW_SECONDS: 900,
      MAX_ORDERS_PER_BUYER: 3,
      REBUY_COOLDOWN_SECONDS: 30,
      EXPIRY_SWEEP_MS: 1000,
      EXPIRY_BATCH_SIZE: 500,
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_SECOND: 10,
      RATE_LIMIT_PER_ADDRESS_PER_SECOND: 1000,
      QUEUE_JOINS_PER_SECOND: 2,
      QUEUE_JOINS_PER_ADDRESS_PER_SECOND: 20,
      QUEUE_FLAG_CLAIM: 'flagged',
      TRUST_PROXY: 0,
      MAX_CONNECTIONS_PER_ADDRESS: 256,
      HTTP_HEADERS_TIMEOUT_MS: 5000,
      HTTP_REQUEST_TIMEOUT_MS: 10_000,
      HTTP_KEEP_ALIVE_TIMEOUT_MS: 5000,
      HTTP_MAX_BODY_BYTES: 1024,
      METRICS_PORT: 3003,
      REDIS_COMMAND_TIMEOUT_MS: 1000,
      REDIS_BACKGROUND_COMMAND_TIMEOUT_MS: 30_000,
      DB_STATEMENT_TIMEOUT_MS: 2000,
      REQUEST_DEADLINE_MS: 3000,
      SALE_VERDICT_TTL_MS: 1000,
      PUBLIC_READS_PER_ADDRESS_PER_SECOND: 200,
      SALE_MISS_TTL_MS: 1000,
      SALE_VERDICT_MAX_HOLDERS: 100_000,
      LIVE_SALES_REFRESH_MS: 2000,
      SHUTDOWN_TIMEOUT_MS: 10_000,
      SHUTDOWN_DRAIN_MS: 0,
      WORKER_BATCH_SIZE: 500,
      WORKER_WRITES_IN_FLIGHT: 2,
      WORKER_IDLE_MS: 5,
      WORKER_BATCH_WAIT_MS: 20,
      WORKER_CLAIM_IDLE_MS: 15_000,
      WORKER_MAX_DELIVERIES: 5,
      WORKER_SALES_REFRESH_MS: 1000,
      WORKER_SWEEP_MS: 250,
      WORKER_SWEEP_PER_SECOND: 1000,
      GATEWAY_DB_POOL_SIZE: 4,
      WORKER_DB_POOL_SIZE: 10,
      RECONCILER_DB_POOL_SIZE: 4,
      DB_POOL_IDLE_TIMEOUT_MS: 3000,
      AUTH_CLOCK_TOLERANCE_SECONDS: 5,
      PAUSED_RETRY_AFTER_SECONDS: 2,
      DOOR_FRONTIER_MAX_AGE_MS: 250,
      GATEWAY_WORKERS: 1,
      WORKER_PORT: 3002,
      RECONCILER_STREAM_RETENTION_MS: 60_000,
      RECONCILER_STREAM_RETENTION_ENTRIES: 10_000,
      RECONCILER_WATCH_PER_SECOND: 200,
      RECONCILER_WATCH_STEP_TIMEOUT_MS: 5000,
      RECONCILER_AUDIT_PER_SECOND: 50,
      RECONCILER_AUDIT_IDLE_MS: 600_000,
      RECONCILER_PORT: 3001,
      RECONCILER_WATCH_MS: 1000,
      RECONCILER_PUBLISH_GRACE_MS: 10_000,
      RECONCILER_CREATE_GRACE_MS: 30_000,
      AUDIT_EVERY_MS: 5000,
      RECONCILE_DRAIN_TIMEOUT_MS: 120_000,
      RECONCILER_CONCURRENCY: 4,
      RECONCILER_WATCH_AFTER_END_MS: 3_600_000,
      RECONCILER_RETIRE_AFTER_END_MS: 60_000,
      ADMIN_SESSION_TTL_SECONDS: 28_800,
      ADMIN_AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: 10,
      ADMIN_AUTH_FAILURES_PER_MINUTE: 100,
      METRICS_HOST: '127.0.0.1',
      METRICS_MAX_CONNECTIONS: 32,
      PAYMENT_EVENTS_PER_ADDRESS_PER_SECOND: 200,
      DASHBOARD_INTERVAL_MS: 1000,
      ADMIN_SESSION_IDLE_SECONDS: 1800,
      DASHBOARD_STREAMS_PER_SESSION: 4,
      DASHBOARD_STREAMS_PER_PROCESS: 32,
      DASHBOARD_DB_POOL_SIZE: 2,
      DASHBOARD_HISTORY_STEP_MS: 1000,
      DASHBOARD_HISTORY_SECONDS: 900,
      DASHBOARD_HISTORY_MAX_SALES: 16,
    });
  });

  it('reads and converts what is set', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'mariadb://app:pw@db:3307/shop',
      REDIS_URL: 'rediss://cache:6380',
      REDIS_PREFIX: 'shop:eu-1',
      PORT: '8080',
      AUTH_SECRET: SECRET,
      ADMIN_TOKEN: ADMIN,
      PAYMENT_WEBHOOK_SECRET: SECRET,
      PAYMENT_WINDOW_SECONDS: '60',
      RATE_LIMIT_PER_SECOND: '3',
    });

    expect(config).toMatchObject({
      NODE_ENV: 'production',
      DATABASE_URL: 'mariadb://app:pw@db:3307/shop',
      REDIS_URL: 'rediss://cache:6380',
      REDIS_PREFIX: 'shop:eu-1',
      PORT: 8080,
      AUTH_SECRET: SECRET,
      ADMIN_TOKEN: ADMIN,
      PAYMENT_WEBHOOK_SECRET: SECRET,
      PAYMENT_WINDOW_SECONDS: 60,
      RATE_LIMIT_PER_SECOND: 3,
    });
  });

  it("takes the rebuy rule's defaults within their bounds, and refuses them outside", () => {
    expect(loadConfig({ MAX_ORDERS_PER_BUYER: '5', REBUY_COOLDOWN_SECONDS: '0' })).toMatchObject({
      MAX_ORDERS_PER_BUYER: 5,
      REBUY_COOLDOWN_SECONDS: 0,
    });
    const env = { MAX_ORDERS_PER_BUYER: '0', REBUY_COOLDOWN_SECONDS: '86401' };
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(refusedVariables(env)).toEqual(['MAX_ORDERS_PER_BUYER', 'REBUY_COOLDOWN_SECONDS']);
    expect(refusedVariables({ MAX_ORDERS_PER_BUYER: '2.5' })).toEqual(['MAX_ORDERS_PER_BUYER']);
  });

  it('ignores variables it does not know', () => {
    expect(loadConfig({ HOME: '/root', PATH: '/bin' }).PORT).toBe(3000);
  });

  it('lists every bad variable in one ConfigError', () => {
    const env = {
      DATABASE_URL: 'postgres://db/shop',
      REDIS_URL: 'http://cache:6379',
      REDIS_PREFIX: 'has spaces',
      PORT: '70000',
      AUTH_SECRET: 'short',
      ADMIN_TOKEN: 'short',
      LOG_LEVEL: 'loud',
      RATE_LIMIT_PER_SECOND: '0',
      WORKER_BATCH_SIZE: '1.5',
      WORKER_DB_POOL_SIZE: 'many',
    };

    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(refusedVariables(env)).toEqual([
      'DATABASE_URL',
      'REDIS_URL',
      'REDIS_PREFIX',
      'PORT',
      'AUTH_SECRET',
      'ADMIN_TOKEN',
      'LOG_LEVEL',
      'RATE_LIMIT_PER_SECOND',
      'WORKER_BATCH_SIZE',
      'WORKER_DB_POOL_SIZE',
    ]);
  });

  it('names each problem in the one error message', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db/shop', REDIS_PREFIX: 'has spaces' })).toThrow(
      'Invalid configuration: DATABASE_URL must be a mysql:// or mariadb:// URL; REDIS_PREFIX must be 1-64 of A-Z a-z 0-9 _ . : -',
    );
  });

  it('requires AUTH_SECRET, ADMIN_TOKEN and PAYMENT_WEBHOOK_SECRET in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      'Invalid configuration: AUTH_SECRET is required in production; ADMIN_TOKEN is required in production; PAYMENT_WEBHOOK_SECRET is required in production',
    );
    expect(refusedVariables({ NODE_ENV: 'production', AUTH_SECRET: SECRET, PAYMENT_WEBHOOK_SECRET: SECRET })).toEqual(['ADMIN_TOKEN']);
    expect(refusedVariables({ NODE_ENV: 'production', ADMIN_TOKEN: ADMIN, PAYMENT_WEBHOOK_SECRET: SECRET })).toEqual(['AUTH_SECRET']);
    expect(refusedVariables({ NODE_ENV: 'production', ADMIN_TOKEN: ADMIN, AUTH_SECRET: SECRET })).toEqual(['PAYMENT_WEBHOOK_SECRET']);
    expect(refusedVariables({ NODE_ENV: 'production', ADMIN_TOKEN: ADMIN, AUTH_SECRET: SECRET, PAYMENT_WEBHOOK_SECRET: 'short' })).toEqual([
      'PAYMENT_WEBHOOK_SECRET',
    ]);
  });

  it('lists the missing production secrets together with every other bad variable', () => {
    expect(refusedVariables({ NODE_ENV: 'production', PORT: 'abc', LOG_LEVEL: 'loud' })).toEqual([
      'PORT',
      'LOG_LEVEL',
      'AUTH_SECRET',
      'ADMIN_TOKEN',
      'PAYMENT_WEBHOOK_SECRET',
    ]);
  });

  it('reports a production secret that is too short once, as too short', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', AUTH_SECRET: 'short', ADMIN_TOKEN: ADMIN, PAYMENT_WEBHOOK_SECRET: SECRET })).toThrow(
      new ConfigError(['AUTH_SECRET must be at least 32 characters']),
    );
  });

  it('refuses in production the published development secrets and secrets with no entropy, saying how to make one', () => {
    const how =
      'make one with `openssl rand -base64 32` (or -base64 48; for ADMIN_TOKEN and METRICS_TOKEN `openssl rand -hex 32` works too)';
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        AUTH_SECRET: DEV_AUTH_SECRET,
        ADMIN_TOKEN: DEV_ADMIN_TOKEN,
        PAYMENT_WEBHOOK_SECRET: DEV_PAYMENT_WEBHOOK_SECRET,
      }),
    ).toThrow(
      new ConfigError([
        `AUTH_SECRET contains a value published in the repository or its documentation, so it is refused in production: ${how}`,
        `ADMIN_TOKEN contains a value published in the repository or its documentation, so it is refused in production: ${how}`,
        `PAYMENT_WEBHOOK_SECRET contains a value published in the repository or its documentation, so it is refused in production: ${how}`,
      ]),
    );
    expect(
      refusedVariables({ NODE_ENV: 'production', AUTH_SECRET: 'a'.repeat(32), ADMIN_TOKEN: ADMIN, PAYMENT_WEBHOOK_SECRET: SECRET }),
    ).toEqual(['AUTH_SECRET']);
    expect(
      refusedVariables({ NODE_ENV: 'production', AUTH_SECRET: SECRET, ADMIN_TOKEN: 'aaaaaaaaaaaaaaaa', PAYMENT_WEBHOOK_SECRET: SECRET }),
    ).toEqual(['ADMIN_TOKEN']);
    expect(
      refusedVariables({ NODE_ENV: 'production', AUTH_SECRET: SECRET, ADMIN_TOKEN: '0000000000000000', PAYMENT_WEBHOOK_SECRET: SECRET }),
    ).toEqual(['ADMIN_TOKEN']);
    expect(
      refusedVariables({ NODE_ENV: 'production', AUTH_SECRET: SECRET, ADMIN_TOKEN: ADMIN, PAYMENT_WEBHOOK_SECRET: 'a'.repeat(32) }),
    ).toEqual(['PAYMENT_WEBHOOK_SECRET']);
  });

  it('refuses in production the near-copies of the published secrets and a guessable one', () => {
    const how = 'make one with `openssl rand -base64 32`';
    const problems = (env: NodeJS.ProcessEnv) => {
      try {
        loadConfig({ NODE_ENV: 'production', AUTH_SECRET: SECRET, ADMIN_TOKEN: ADMIN, PAYMENT_WEBHOOK_SECRET: SECRET, ...env });
      } catch (error) {
        return (error as ConfigError).problems;
      }
      return [];
    };
    const refused = (name: string, value: string) => {
      const found = problems({ [name]: value });
      expect(found).toHaveLength(1);
      expect(found[0]).toMatch(new RegExp(`^${name} (contains a value published|is too easy to guess)`));
      expect(found[0]).toContain(how);
    };
    refused('AUTH_SECRET', `${DEV_AUTH_SECRET}x`);
    refused('ADMIN_TOKEN', `${DEV_ADMIN_TOKEN}=`);
    refused('PAYMENT_WEBHOOK_SECRET', `${DEV_PAYMENT_WEBHOOK_SECRET.toUpperCase().slice(0, 20)}${DEV_PAYMENT_WEBHOOK_SECRET.slice(20)} `);
    refused('AUTH_SECRET', 'passwordpasswordpassword12345678');
    refused('PAYMENT_WEBHOOK_SECRET', 'passwordpasswordpassword12345678');
    expect(problems({})).toEqual([]);
  });

  it('keeps taking any well-formed secret outside production', () => {
    expect(loadConfig({ NODE_ENV: 'development', ADMIN_TOKEN: 'aaaaaaaaaaaaaaaa', AUTH_SECRET: 'a'.repeat(32) }).ADMIN_TOKEN).toBe(
      'aaaaaaaaaaaaaaaa',
    );
  });

  it('drains a stopping gateway 5 s in production (at most half the shutdown deadline), not at all elsewhere, and refuses a drain as long as the deadline', () => {
    const production = { NODE_ENV: 'production', AUTH_SECRET: SECRET, ADMIN_TOKEN: ADMIN, PAYMENT_WEBHOOK_SECRET: SECRET };
    expect(loadConfig(production).SHUTDOWN_DRAIN_MS).toBe(5000);
    expect(loadConfig({ ...production, SHUTDOWN_TIMEOUT_MS: '4000' }).SHUTDOWN_DRAIN_MS).toBe(2000);
    expect(loadConfig({}).SHUTDOWN_DRAIN_MS).toBe(0);
    expect(loadConfig({ SHUTDOWN_DRAIN_MS: '1500' }).SHUTDOWN_DRAIN_MS).toBe(1500);
    expect(refusedVariables({ SHUTDOWN_DRAIN_MS: '10000' })).toEqual(['SHUTDOWN_DRAIN_MS']);
  });

  it('uses the development secrets outside production', () => {
    for (const NODE_ENV of ['development', 'test']) {
      const config = loadConfig({ NODE_ENV });
      expect([config.AUTH_SECRET, config.ADMIN_TOKEN]).toEqual([DEV_AUTH_SECRET, DEV_ADMIN_TOKEN]);
    }
  });

  it("reads Redis Sentinel (the sentinels and the primary's name), and refuses it together with a cluster", () => {
    expect(loadConfig({ REDIS_SENTINELS: 'sentinel-1:26379,10.0.0.2:26380', REDIS_SENTINEL_MASTER: 'shop' })).toMatchObject({
      REDIS_SENTINELS: [
        { host: 'sentinel-1', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
      ],
      REDIS_SENTINEL_MASTER: 'shop',
    });
    expect(() => loadConfig({ REDIS_SENTINELS: 'sentinel-1' })).toThrow('REDIS_SENTINELS must be host:port[,host:port...]');
    expect(() => loadConfig({ REDIS_SENTINELS: 'a:1', REDIS_CLUSTER_NODES: 'b:2' })).toThrow(
      'REDIS_SENTINELS cannot be set together with REDIS_CLUSTER_NODES: Redis is either a cluster or a primary watched by sentinels',
    );
    expect(() => loadConfig({ REDIS_SENTINEL_MASTER: 'my master' })).toThrow('REDIS_SENTINEL_MASTER must be 1-64 of A-Z a-z 0-9 _ . -');
  });

  it('treats an empty variable as unset', () => {
    const config = loadConfig({ PORT: '', LOG_LEVEL: '', WORKER_DB_POOL_SIZE: '' });

    expect([config.PORT, config.LOG_LEVEL, config.WORKER_DB_POOL_SIZE]).toEqual([3000, 'info', 10]);
  });

  it('refuses DB_POOL_SIZE, which pools sized per role replaced, instead of ignoring it', () => {
    expect(() => loadConfig({ DB_POOL_SIZE: '20' })).toThrow(
      'Invalid configuration: DB_POOL_SIZE was replaced by GATEWAY_DB_POOL_SIZE, WORKER_DB_POOL_SIZE and RECONCILER_DB_POOL_SIZE (pools are sized per role)',
    );
  });

  it('refuses an empty REDIS_PREFIX, AUTH_SECRET or ADMIN_TOKEN instead of falling back to a default', () => {
    expect(refusedVariables({ REDIS_PREFIX: '' })).toEqual(['REDIS_PREFIX']);
    expect(() => loadConfig({ REDIS_PREFIX: '', AUTH_SECRET: '', ADMIN_TOKEN: '' })).toThrow(
      'Invalid configuration: REDIS_PREFIX is set but empty: give it a value or unset it; AUTH_SECRET is set but empty: give it a value or unset it; ADMIN_TOKEN is set but empty: give it a value or unset it',
    );
  });

  it.each([
    ['a space', 'admin token with spaces'],
    ['a non-ASCII letter', 'admin-token-é-0123456'],
    ['a colon', 'admin:token:0123456789'],
    ['an = inside', 'admin=token=0123456789'],
  ])('refuses an ADMIN_TOKEN with %s, which no Authorization: Bearer header can carry', (_, token) => {
    expect(refusedVariables({ ADMIN_TOKEN: token })).toEqual(['ADMIN_TOKEN']);
  });

  it('accepts an ADMIN_TOKEN of token68 characters with trailing padding', () => {
    expect(loadConfig({ ADMIN_TOKEN: 'aZ09-._~+/admin-token==' }).ADMIN_TOKEN).toBe('aZ09-._~+/admin-token==');
  });

  it('accepts port 0, which picks a free port', () => {
    expect(loadConfig({ PORT: '0' }).PORT).toBe(0);
  });

  it("takes the buyer page's payment URL only with {reservationId} in it, and http(s) URLs only for both", () => {
    expect(
      loadConfig({
        BUYER_PAGE_PAYMENT_URL: 'https://shop.example/pay?r={reservationId}',
        BUYER_PAGE_SIGN_IN_URL: 'https://shop.example/login?next={return}',
      }),
    ).toMatchObject({
      BUYER_PAGE_PAYMENT_URL: 'https://shop.example/pay?r={reservationId}',
      BUYER_PAGE_SIGN_IN_URL: 'https://shop.example/login?next={return}',
    });
    expect(refusedVariables({ BUYER_PAGE_PAYMENT_URL: 'https://shop.example/pay', BUYER_PAGE_SIGN_IN_URL: 'javascript:alert(1)' })).toEqual(
      ['BUYER_PAGE_PAYMENT_URL', 'BUYER_PAGE_SIGN_IN_URL'],
    );
    expect(refusedVariables({ BUYER_PAGE_PAYMENT_URL: 'javascript:x({reservationId})' })).toEqual(['BUYER_PAGE_PAYMENT_URL']);
  });
});
