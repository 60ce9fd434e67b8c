import { z } from 'zod';
import { HOW_TO_MAKE_A_SECRET, weakSecretReason } from './secret-strength.ts';

/** Values used when not in production, so `npm run demo` and the tests work with no setup. */
export const DEV_AUTH_SECRET = 'dev-only-auth-secret-change-me-0123456789';
export const DEV_ADMIN_TOKEN = 'dev-only-admin-token';
export const DEV_PAYMENT_WEBHOOK_SECRET = 'dev-only-payment-webhook-secret-0123456789';

/**
 * The form of each secret (checked everywhere), apart from its strength (secret-strength.ts, checked in
 * production on a value of the right form, so a short secret is reported once, as short).
 */
const SECRET_SHAPES = {
  AUTH_SECRET: z.string().min(32, 'must be at least 32 characters'),
  ADMIN_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .regex(/^[A-Za-z0-9._~+/-]+=*$/, 'must contain only A-Z a-z 0-9 - . _ ~ + / (and trailing =), the characters of a bearer token'),
  PAYMENT_WEBHOOK_SECRET: z.string().min(32, 'must be at least 32 characters'),
};

/** Optional secrets, held to the same strength in production when they are set. */
const OPTIONAL_SECRETS = ['METRICS_TOKEN'] as const;

const intFrom = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** `host:port,host:port,...` as a list of { host, port }. */
const hostPortList = () =>
  z
    .string()
    .regex(/^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$/, 'must be host:port[,host:port...]')
    .transform((list) =>
      list.split(',').map((node) => {
        const at = node.lastIndexOf(':');
        return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
      }),
    )
    .refine((nodes) => nodes.every(({ port }) => port >= 1 && port <= 65535), 'every port must be 1-65535');

export const configSchema = z
  .object({
    NODE_ENV: z
      .enum(['development', 'test', 'production'])
      .default('development')
      .describe(
        '`production` makes `AUTH_SECRET`, `ADMIN_TOKEN` and `PAYMENT_WEBHOOK_SECRET` mandatory and refuses published or patterned secrets ([Security](operations.md#security)); it also changes the defaults of `SHUTDOWN_DRAIN_MS` and `ADMIN_COOKIE_SECURE`.',
      ),
    DATABASE_URL: z
      .string()
      .regex(/^(mysql|mariadb):\/\//, 'must be a mysql:// or mariadb:// URL')
      .default('mysql://root@127.0.0.1:3306/flashsale')
      .meta({ description: 'MySQL or MariaDB.', values: 'a `mysql://` or `mariadb://` URL' }),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
      .default('redis://127.0.0.1:6379')
      .meta({
        description: 'Redis, when neither `REDIS_CLUSTER_NODES` nor `REDIS_SENTINELS` is set.',
        values: 'a `redis://` or `rediss://` URL',
      }),
    REDIS_CLUSTER_NODES: hostPortList().optional().meta({
      description:
        'Seed nodes of a Redis Cluster (any nodes of it; the client learns the rest). When set, every process uses the cluster and `REDIS_URL` is ignored. See [Running on a Redis Cluster](operations.md#running-on-a-redis-cluster).',
      values: '`host:port,host:port,...`',
    }),
    REDIS_SENTINELS: hostPortList().optional().meta({
      description:
        'The Redis Sentinel processes that watch the primary named `REDIS_SENTINEL_MASTER`. When set, every process asks them where the primary is (again after a failover) and `REDIS_URL` is ignored. Not together with `REDIS_CLUSTER_NODES`. See [Running on Redis Sentinel](operations.md#running-on-redis-sentinel).',
      values: '`host:port,host:port,...`',
    }),
    REDIS_SENTINEL_MASTER: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ . -')
      .default('mymaster')
      .meta({
        description: 'The name the sentinels monitor the primary under (`sentinel monitor <name> ...`).',
        values: '1-64 of `A-Z a-z 0-9 _ . -`',
      }),
    REDIS_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ . : -')
      .default('fs')
      .meta({
        description: 'Namespace of every Redis key, so deployments or test runs can share one Redis. Set but empty is refused at start.',
        values: '1-64 of `A-Z a-z 0-9 _ . : -`',
      }),
    PORT: intFrom(0, 65535).default(3000).describe("The gateway's HTTP port (0 picks a free one)."),
    AUTH_CLOCK_TOLERANCE_SECONDS: intFrom(0, 300)
      .default(5)
      .describe(
        "Seconds a buyer token's `exp`, `nbf` and `iat` may be off: a gateway whose clock runs a little ahead of the token issuer's does not refuse tokens just issued or about to expire.",
      ),
    AUTH_SECRET: SECRET_SHAPES.AUTH_SECRET.optional().meta({
      description: 'HS256 key of buyer tokens. Required in production, and strong there ([Security](operations.md#security)).',
      defaultIs: 'a fixed development value; required in production',
    }),
    ADMIN_TOKEN: SECRET_SHAPES.ADMIN_TOKEN.optional().meta({
      description:
        "Bearer token of `/api/admin/*` and the dashboard's sign-in. Required in production, and strong there. Only the characters a bearer token can carry (RFC 6750 token68), or no admin call could present it.",
      defaultIs: 'a fixed development value; required in production',
      values: 'at least 16 of `A-Z a-z 0-9 - . _ ~ + /`, then any `=`',
    }),
    PAYMENT_WEBHOOK_SECRET: SECRET_SHAPES.PAYMENT_WEBHOOK_SECRET.optional().meta({
      description:
        "HMAC-SHA256 key of the payment provider's events (`Payment-Signature`): the secret the provider's dashboard gives. Required in production, and strong there.",
      defaultIs: 'a fixed development value; required in production',
    }),
    PAYMENT_WINDOW_SECONDS: intFrom(10, 86_400)
      .default(900)
      .describe('Time a winner has to pay, for a sale created without `paymentWindowSeconds`.'),
    MAX_ORDERS_PER_BUYER: intFrom(1, 1000)
      .default(3)
      .describe(
        'The rebuy rule of a sale created without `maxOrdersPerBuyer`: the most orders one buyer may open in it, live, cancelled and expired together ([The rebuy rule](api.md#the-rebuy-rule)).',
      ),
    REBUY_COOLDOWN_SECONDS: intFrom(0, 86_400)
      .default(30)
      .describe(
        "The rebuy rule of a sale created without `rebuyCooldownSeconds`: the wait after a buyer's second closed order in a sale, doubled after each later one.",
      ),
    EXPIRY_SWEEP_MS: intFrom(50, 600_000)
      .default(1000)
      .describe(
        'How often each worker expires the unpaid orders past their `payBy` and settles the units owed back to Redis: an order expires within about this after its `payBy` while MySQL answers.',
      ),
    EXPIRY_BATCH_SIZE: intFrom(1, 10_000)
      .default(500)
      .describe(
        'Orders one expiry transaction closes per sale (a full batch is followed at once by the next), and units returned per Redis call.',
      ),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('The pino log level.'),
    RATE_LIMIT_PER_SECOND: intFrom(1, 1_000_000)
      .default(10)
      .describe('Purchases (and, separately, reservation lookups) one buyer may send per second to one gateway process before `429`.'),
    RATE_LIMIT_PER_ADDRESS_PER_SECOND: intFrom(0, 10_000_000)
      .default(1000)
      .describe(
        'Purchases (and reservation lookups) one client address may send per second to one gateway process before `429`; 0 = no limit (a load test from one machine, or a proxy that limits).',
      ),
    PUBLIC_READS_PER_ADDRESS_PER_SECOND: intFrom(0, 10_000_000)
      .default(200)
      .describe(
        'Unauthenticated reads (`GET /api/sales/:id`, `/readyz`) one client address may send per second to one gateway process; past it `429` with `Retry-After: 1`, and a sale read asked again within the same second is answered when the next second starts; 0 = no limit. A miss costs MySQL a query: this keeps a flood of made-up ids from reaching it unbounded.',
      ),
    SALE_MISS_TTL_MS: intFrom(0, 60_000)
      .default(1000)
      .describe(
        'How long a gateway process remembers that MySQL holds no sale of an id (forgotten at once when one is created); 0 = never remember.',
      ),
    QUEUE_JOINS_PER_SECOND: intFrom(1, 1_000_000)
      .default(2)
      .describe(
        'Waiting-room joins (each one Redis call, and a place) one buyer may send per second to one gateway process before `429`: a buyer joins once; a second join answers the same place.',
      ),
    QUEUE_JOINS_PER_ADDRESS_PER_SECOND: intFrom(0, 10_000_000)
      .default(20)
      .describe(
        'Waiting-room joins one client address may send per second to one gateway process before `429`; 0 = no limit. A farm of accounts behind one address joins at this pace at most; an honest buyer refused before the start loses nothing (the draw at the start is random), after it a second.',
      ),
    QUEUE_FLAG_CLAIM: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/, 'must be a claim name')
      .default('flagged')
      .meta({
        description:
          "The buyer-token claim by which the shop's identity system flags an account: a token with it set to `true` is answered from the shadow queue (told waiting, never admitted).",
        values: 'a claim name',
      }),
    PAYMENT_EVENTS_PER_ADDRESS_PER_SECOND: intFrom(0, 10_000_000)
      .default(200)
      .describe(
        'Payment events one client address may post per second to one gateway process, counted before the signature is checked; past it `429` with `Retry-After: 1` (providers retry); 0 = no limit.',
      ),
    TRUST_PROXY: intFrom(0, 16)
      .default(0)
      .describe(
        "Proxies in front of the gateway whose `X-Forwarded-For` is trusted. 0: the socket's address is the client's; N: the client is the Nth address from the right of `X-Forwarded-For`.",
      ),
    MAX_CONNECTIONS_PER_ADDRESS: intFrom(0, 1_000_000)
      .default(256)
      .describe('Open connections one client address may hold on one gateway process; 0 = no cap (behind a proxy that caps).'),
    MAX_CONNECTIONS: intFrom(1, 10_000_000).optional().meta({
      description: 'Open connections of one gateway process in all.',
      defaultIs: "below the process's open-file limit, with room for its own",
    }),
    HTTP_HEADERS_TIMEOUT_MS: intFrom(100, 600_000)
      .default(5000)
      .describe("Time a client has to send a request's headers (slow-header attacks end here)."),
    HTTP_REQUEST_TIMEOUT_MS: intFrom(100, 600_000)
      .default(10_000)
      .describe('Time a client has to send a whole request, body included (slow bodies end here).'),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: intFrom(100, 600_000)
      .default(5000)
      .describe("How long an idle keep-alive connection stays open (set it above a proxy's idle timeout)."),
    HTTP_MAX_BODY_BYTES: intFrom(64, 1_048_576)
      .default(1024)
      .describe(
        'Largest request body the gateway reads, in bytes: a purchase carries `{"quantity":n}` and a sale create a few hundred bytes, so anything larger is refused with `413 PAYLOAD_TOO_LARGE` before it is parsed.',
      ),
    METRICS_HOST: z
      .string()
      .regex(/^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*|[0-9A-Fa-f:.]+)$/, 'must be a host name or an IP address')
      .default('127.0.0.1')
      .meta({
        description:
          'The address every internal port (`METRICS_PORT`, `WORKER_PORT`, `RECONCILER_PORT`: `/metrics`, `/healthz`, `/readyz`) listens on: nothing outside the host reaches it unless set to `0.0.0.0` or an internal address, for a Prometheus elsewhere.',
        values: 'a host name or an IP address',
      }),
    METRICS_TOKEN: z
      .string()
      .min(16, 'must be at least 16 characters')
      .regex(/^[A-Za-z0-9._~+/-]+=*$/, 'must contain only A-Z a-z 0-9 - . _ ~ + / (and trailing =), the characters of a bearer token')
      .optional()
      .meta({
        description:
          "When set, `/metrics` answers only `Authorization: Bearer <METRICS_TOKEN>` (`401` otherwise); `/healthz` and `/readyz` stay open for orchestrators' probes. Strong in production. Unset, the port is on loopback (`METRICS_HOST`).",
        values: 'at least 16 of `A-Z a-z 0-9 - . _ ~ + /`, then any `=`',
      }),
    METRICS_MAX_CONNECTIONS: intFrom(4, 10_000)
      .default(32)
      .describe(
        "Connections a process's internal port holds at once (one address at most a quarter of them); past it a new one is closed at once. The gateway keeps these descriptors out of `PORT`'s share of its open-file limit, so a flood of the metrics port never starves the buyers' port.",
      ),
    METRICS_PORT: intFrom(0, 65535)
      .default(3003)
      .describe("Port of the gateway's `/metrics`, never served on `PORT` (0 picks a free one)."),
    REDIS_COMMAND_TIMEOUT_MS: intFrom(50, 60_000)
      .default(1000)
      .describe(
        'Deadline of every Redis command on a request path (blocking reads carry their own): past it the buyer gets `503 SERVICE_UNAVAILABLE` at once instead of waiting on a hung Redis.',
      ),
    REDIS_BACKGROUND_COMMAND_TIMEOUT_MS: intFrom(1000, 600_000)
      .default(30_000)
      .describe(
        "Deadline of the Redis commands of the worker and the reconciler: longer than a request's, since a rebuild script over a large sale may rightly take seconds, but never unbounded.",
      ),
    REDIS_WAIT_REPLICAS: intFrom(0, 16)
      .default(0)
      .describe(
        "Replicas that must hold a reservation before the buyer is answered 202 (Redis `WAIT`, in the same round trip as the reserve script); 0 = answer at once. Set it to the number of replicas of each primary: fewer can still lose a 202 in a failover, since `WAIT` counts any N replicas and the failover may promote one that had not acknowledged. Fewer acknowledgements within `REDIS_WAIT_TIMEOUT_MS`: `503`, and the buyer's retry learns the outcome; with every replica required, one replica down makes every purchase `503`. See [Waiting for a replica](operations.md#waiting-for-a-replica-before-answering-202).",
      ),
    REDIS_WAIT_TIMEOUT_MS: intFrom(1, 10_000).default(100).describe('How long the gateway waits for `REDIS_WAIT_REPLICAS` replicas.'),
    DB_STATEMENT_TIMEOUT_MS: intFrom(100, 600_000)
      .default(2000)
      .describe("Longest a gateway's MySQL statement may run (MariaDB's `max_statement_time`, lock waits included)."),
    REQUEST_DEADLINE_MS: intFrom(100, 600_000)
      .default(3000)
      .describe(
        'Deadline of a read or admin request (not a purchase, whose one Redis call has its own, nor a reconcile, which waits for the drain): past it `503 SERVICE_UNAVAILABLE`.',
      ),
    SALE_VERDICT_TTL_MS: intFrom(0, 60_000)
      .default(1000)
      .describe(
        'How long a gateway answers a sold-out or ended sale from memory without news from the reconciler (a safety net should a sale event be lost); 0 = always ask Redis.',
      ),
    SALE_VERDICT_MAX_HOLDERS: intFrom(0, 10_000_000)
      .default(100_000)
      .describe(
        "The most holders of a sold-out or ended sale a gateway keeps in memory (about 100 bytes each) to answer their retries without Redis; a larger sale's refusals come from the reserve script (one Redis call, still correct).",
      ),
    LIVE_SALES_REFRESH_MS: intFrom(100, 600_000)
      .default(2000)
      .describe(
        'How often a gateway reads the live sales from MySQL, so a live sale Redis lost answers `503 SALE_PAUSED`, not `404`. Keep `DB_POOL_IDLE_TIMEOUT_MS` under twice this, or the refresh keeps a second connection of an idle gateway open.',
      ),
    SHUTDOWN_TIMEOUT_MS: intFrom(100, 600_000)
      .default(10_000)
      .describe('A stopping process that has not finished what it holds by then exits anyway (code 1).'),
    SHUTDOWN_DRAIN_MS: intFrom(0, 600_000).optional().meta({
      description:
        'How long a stopping gateway answers `/readyz` 503 (and `/healthz` `{"status":"stopping"}`) while it still serves, every response closing its connection, before it stops accepting: the time a load balancer needs to take it out of rotation. Must be below `SHUTDOWN_TIMEOUT_MS`, or the gateway refuses to start. See [Stopping a gateway](operations.md#stopping-a-gateway-a-rolling-restart).',
      defaultIs: '5000 in production (at most half of `SHUTDOWN_TIMEOUT_MS`), else 0',
    }),
    WORKER_BATCH_SIZE: intFrom(1, 5000).default(500).describe("Entries a worker takes from one sale's stream per MySQL transaction."),
    WORKER_WRITES_IN_FLIGHT: intFrom(1, 16)
      .default(2)
      .describe('Batches of one sale a worker writes at once: the next waits at MySQL while one commits.'),
    WORKER_IDLE_MS: intFrom(1, 10_000).default(5).describe('Pause between reads of the hot sales when none had anything.'),
    WORKER_BATCH_WAIT_MS: intFrom(0, 10_000)
      .default(20)
      .describe(
        'A sale whose read gave less than a whole batch (or nothing) is read again no sooner than this (0: at once), so what arrives meanwhile goes to MySQL as one batch: at a moderate rate small batches cost the workers and MySQL most of their CPU per order ([performance.md](performance.md#the-whole-pipeline-cpu-per-order)). An order reaches MySQL up to this much later; the 202 is not delayed.',
      ),
    WORKER_CLAIM_IDLE_MS: intFrom(100, 3_600_000)
      .default(15_000)
      .describe('Entries pending this long on a consumer are taken over by another worker.'),
    WORKER_MAX_DELIVERIES: intFrom(1, 1000).default(5).describe('Deliveries after which a failing entry goes to the dead-letter stream.'),
    WORKER_SALES_REFRESH_MS: intFrom(10, 600_000)
      .default(1000)
      .describe('How often a worker reads the list of published sales again (a new sale is polled from then on).'),
    WORKER_SWEEP_MS: intFrom(10, 600_000)
      .default(250)
      .describe(
        "Every live sale's stream is read at least this often even when no gateway signalled work on it: the signal is a hint, and one lost to a crash or a dropped subscription is made up here (unless `WORKER_SWEEP_PER_SECOND` stretches it).",
      ),
    WORKER_SWEEP_PER_SECOND: intFrom(1, 1_000_000)
      .default(1000)
      .describe(
        "The most sales a worker sweeps per second: with more live sales than this x `WORKER_SWEEP_MS` / 1000, each is swept every (sales / this) seconds, so an idle worker's cost does not grow with the number of sales.",
      ),
    GATEWAY_DB_POOL_SIZE: intFrom(1, 500)
      .default(4)
      .describe(
        'Most MySQL connections one gateway process opens, for reads and admin (purchases never touch MySQL); opened when needed, released when idle. See [MySQL connection budget](operations.md#mysql-connection-budget).',
      ),
    WORKER_DB_POOL_SIZE: intFrom(1, 500)
      .default(10)
      .describe('Most MySQL connections one worker process opens: its order batches run side by side.'),
    RECONCILER_DB_POOL_SIZE: intFrom(1, 500)
      .default(4)
      .describe(
        'Most MySQL connections the reconciler (or `npm run reconcile`) pools, besides one per reconciliation running (its sale lock, `RECONCILER_CONCURRENCY`).',
      ),
    DB_POOL_IDLE_TIMEOUT_MS: intFrom(1000, 3_600_000)
      .default(3000)
      .describe(
        'A pooled MySQL connection unused this long is closed, one per process kept. The driver hands out the connection idle longest first, so a query every P ms keeps about this / P connections open: under twice `LIVE_SALES_REFRESH_MS` (4000 by default) an idle gateway comes down to one.',
      ),
    PAUSED_RETRY_AFTER_SECONDS: intFrom(1, 3600).default(2).describe('`Retry-After` of `503 SALE_PAUSED`.'),
    DOOR_FRONTIER_MAX_AGE_MS: intFrom(10, 10_000)
      .default(250)
      .describe(
        "How old a gateway's copy of a queued sale's door may be before a buyer's status poll reads (and moves) it again: each gateway makes at most 1000 / this admit calls per second per queued sale its buyers ask about, whatever the crowd; also the most a waiting buyer's answer lags the door.",
      ),
    GATEWAY_WORKERS: intFrom(1, 256)
      .default(1)
      .describe('Gateway processes sharing `PORT` (node:cluster); a supervisor replaces one that dies. One per core uses them all.'),
    WORKER_PORT: intFrom(0, 65535)
      .default(3002)
      .describe(
        "Port of a worker's `/metrics`, `/healthz` and `/readyz`: give each worker on one host its own, or 0 for a free one (logged at start).",
      ),
    RECONCILER_PORT: intFrom(0, 65535)
      .default(3001)
      .describe("Port of the reconciler's `/metrics`, `/healthz` and `/readyz` (0 picks a free one)."),
    RECONCILER_WATCH_MS: intFrom(50, 60_000)
      .default(1000)
      .describe(
        "How soon the reconciler looks again at a live sale's Redis state (every sale, up to `RECONCILER_WATCH_PER_SECOND` x this / 1000 of them).",
      ),
    RECONCILER_PUBLISH_GRACE_MS: intFrom(0, 3_600_000)
      .default(10_000)
      .describe('A sale younger than this is not judged by the reconciler: its publish may be under way.'),
    RECONCILER_CREATE_GRACE_MS: intFrom(1000, 3_600_000)
      .default(30_000)
      .describe(
        "A sale create unfinished this long (its request died, or could not take back a failed publish), on MySQL's clock, is abandoned by the reconciler. Keep it above `REQUEST_DEADLINE_MS`: a create still running must not be abandoned under it.",
      ),
    RECONCILER_STREAM_RETENTION_MS: intFrom(0, 604_800_000)
      .default(60_000)
      .describe("How long acknowledged entries (orders already, or dead letters) stay in a sale's stream."),
    RECONCILER_STREAM_RETENTION_ENTRIES: intFrom(0, 100_000_000)
      .default(10_000)
      .describe(
        "Past this many entries, acknowledged ones go at the next look whatever their age, so a stream's length is bounded at any accept rate: what is in flight, plus what came since the checkpoint, plus this.",
      ),
    RECONCILER_WATCH_PER_SECOND: intFrom(1, 1_000_000)
      .default(200)
      .describe(
        'The most sales the reconciler looks at per second: each live sale is looked at every max(`RECONCILER_WATCH_MS`, sales / this); a sale that changed at its last look comes first.',
      ),
    RECONCILER_WATCH_STEP_TIMEOUT_MS: intFrom(100, 600_000)
      .default(5000)
      .describe(
        "The longest one step of the reconciler's watch (a look at a sale, the list of sales, a round of retirements) may take: past it the step is passed over, logged (`watch step overdue`, with the sale) and counted (`flashsale_reconciler_watch_overdue_total`), and the watch goes on to the other sales; the look is taken again at the next tick. A command of its own still waits up to `REDIS_BACKGROUND_COMMAND_TIMEOUT_MS`.",
      ),
    RECONCILER_AUDIT_PER_SECOND: intFrom(1, 1_000_000)
      .default(50)
      .describe('The most sales one audit run checks, per second of `AUDIT_EVERY_MS`.'),
    RECONCILER_AUDIT_IDLE_MS: intFrom(100, 86_400_000)
      .default(600_000)
      .describe(
        'A sale unchanged since its last clean audit is audited again only after this long (10 minutes by default): an idle sale costs nothing between; a sale that changed is audited at the next run.',
      ),
    AUDIT_EVERY_MS: intFrom(100, 3_600_000)
      .default(5000)
      .describe("How often the audit checks the live sales' ledgers (the sales that changed first)."),
    RECONCILE_DRAIN_TIMEOUT_MS: intFrom(100, 3_600_000)
      .default(120_000)
      .describe('How long a reconciliation waits for the stream to drain before it fails (and is retried).'),
    RECONCILER_CONCURRENCY: intFrom(1, 64)
      .default(4)
      .describe(
        'Reconciliations of different sales one reconciler runs at once (one sale never has two). Each holds a MySQL connection of its own for its sale lock, besides `RECONCILER_DB_POOL_SIZE`.',
      ),
    RECONCILER_WATCH_AFTER_END_MS: intFrom(0, 2_592_000_000)
      .default(3_600_000)
      .describe(
        "How long after its end a sale is still watched and audited, on MySQL's clock: its stream may hold entries written before the end, and a loss found then is still counted.",
      ),
    RECONCILER_RETIRE_AFTER_END_MS: intFrom(0, 2_592_000_000)
      .default(60_000)
      .describe(
        "How long after its end (on Redis's clock) a drained sale stays in the workers' list of sales to poll; then the reconciler takes it out, so idle workers do not poll every sale ever published.",
      ),
    ADMIN_SESSION_TTL_SECONDS: intFrom(60, 604_800)
      .default(28_800)
      .describe('How long a dashboard sign-in lasts (8 hours by default); then the operator signs in again.'),
    ADMIN_COOKIE_SECURE: z.enum(['0', '1']).optional().meta({
      description:
        "`1` marks the dashboard's session cookie `Secure` (sent over HTTPS only: behind the TLS-terminating proxy); `0` for plain http on a laptop or in CI.",
      defaultIs: '`1` in production, else `0`',
    }),
    ADMIN_AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: intFrom(1, 1_000_000)
      .default(10)
      .describe(
        "Failed admin authentications (a wrong admin token, as a bearer token or at the dashboard's sign-in) one client address may make per minute on one gateway process: past it every admin authentication from that address is refused with `429`, the token unchecked, until the minute ends.",
      ),
    ADMIN_AUTH_FAILURES_PER_MINUTE: intFrom(1, 10_000_000)
      .default(100)
      .describe(
        'The same for all addresses together on one gateway process: a guess spread over many addresses is held too (operators wait out the minute with it).',
      ),
    ADMIN_ALLOWED_HOSTS: z
      .string()
      .transform((list) => list.split(',').map((host) => host.trim().toLowerCase()))
      .refine(
        (hosts) => hosts.every((host) => host === '*' || /^([a-z0-9_-]+(\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])(:\d{1,5})?$/.test(host)),
        'must be host or host:port values, comma-separated (or *)',
      )
      .optional()
      .meta({
        description:
          "The `Host` values `/api/admin/*` and `/admin/*` answer; others get `403 HOST_NOT_ALLOWED`, so a page that rebinds its own name to this address (DNS rebinding) cannot reach the admin surface from an operator's browser.",
        defaultIs: "`localhost`, `127.0.0.1`, `[::1]` and the machine's hostname, any port",
        values: 'comma-separated `name` (any port), `name:port`, or `*` for any',
      }),
    BUYER_PAGE_PAYMENT_URL: z
      .string()
      .max(2048)
      .refine(
        (url) => /^https?:\/\/[^\s]+$/.test(url) && url.includes('{reservationId}'),
        'must be an http(s) URL with {reservationId} in it',
      )
      .optional()
      .meta({
        description:
          "Where the buyer's page sends a buyer to pay an order (the shop's checkout). Unset: outside production the page pays through the demo's payment provider; in production it says the shop will ask for the payment. See [The buyer's page](operations.md#the-buyers-page).",
        values: 'an http(s) URL with `{reservationId}` in it',
      }),
    BUYER_PAGE_SIGN_IN_URL: z
      .string()
      .max(2048)
      .refine((url) => /^https?:\/\/[^\s]+$/.test(url), 'must be an http(s) URL')
      .optional()
      .meta({
        description:
          "Where the buyer's page sends a buyer without a token (the shop's sign-in), `{return}` replaced by the page's own address. Unset: outside production the page offers a development sign-in; in production it asks the buyer to sign in at the shop.",
        values: 'an http(s) URL, may hold `{return}`',
      }),
    DASHBOARD_INTERVAL_MS: intFrom(100, 60_000)
      .default(1000)
      .describe("How often the dashboard's live view of a sale is read and pushed, once for all its viewers."),
    ADMIN_SESSION_IDLE_SECONDS: intFrom(60, 604_800)
      .default(1800)
      .describe(
        'A dashboard session unused this long ends (30 minutes by default): loading the page, opening a live stream and every control count as use; the pushes of an open stream do not. Never beyond `ADMIN_SESSION_TTL_SECONDS`.',
      ),
    DASHBOARD_STREAMS_PER_SESSION: intFrom(1, 256)
      .default(4)
      .describe(
        'Live streams (`GET /admin/live`) one dashboard session may hold open on one gateway process; past it `429 LIVE_STREAM_LIMIT`.',
      ),
    DASHBOARD_STREAMS_PER_PROCESS: intFrom(1, 4096)
      .default(32)
      .describe('Live streams one gateway process holds open for all sessions; past it `429 LIVE_STREAM_LIMIT`.'),
    DASHBOARD_DB_POOL_SIZE: intFrom(1, 16)
      .default(2)
      .describe(
        "Most MySQL connections of the dashboard's own pool in each gateway process: its live views and the checks before a stream opens read through it, never through the buyers' `GATEWAY_DB_POOL_SIZE`.",
      ),
    DASHBOARD_HISTORY_STEP_MS: intFrom(100, 60_000)
      .default(1000)
      .describe("Time between two points of the dashboard's charts (of every live sale and of the process)."),
    DASHBOARD_HISTORY_SECONDS: intFrom(10, 86_400)
      .default(900)
      .describe("How far back the dashboard's charts reach (15 minutes by default): the history each gateway process keeps."),
    DASHBOARD_HISTORY_MAX_SALES: intFrom(1, 1000)
      .default(16)
      .describe("The most live sales the history follows at once (the newest); it bounds the history's memory."),
  })
  .superRefine(
    (env, ctx) => {
      if (env.REDIS_CLUSTER_NODES && env.REDIS_SENTINELS) {
        ctx.addIssue({
          code: 'custom',
          path: ['REDIS_SENTINELS'],
          message: 'cannot be set together with REDIS_CLUSTER_NODES: Redis is either a cluster or a primary watched by sentinels',
        });
      }
      if (env.NODE_ENV !== 'production') return;
      if (!env.AUTH_SECRET) ctx.addIssue({ code: 'custom', path: ['AUTH_SECRET'], message: 'is required in production' });
      if (!env.ADMIN_TOKEN) ctx.addIssue({ code: 'custom', path: ['ADMIN_TOKEN'], message: 'is required in production' });
      if (!env.PAYMENT_WEBHOOK_SECRET)
        ctx.addIssue({ code: 'custom', path: ['PAYMENT_WEBHOOK_SECRET'], message: 'is required in production' });
      // A published or patterned secret is no secret (secret-strength.ts states the rule).
      for (const [name, shape] of Object.entries(SECRET_SHAPES)) {
        const value = env[name as keyof typeof SECRET_SHAPES];
        const reason = value === undefined || !shape.safeParse(value).success ? null : weakSecretReason(value);
        if (reason)
          ctx.addIssue({ code: 'custom', path: [name], message: `${reason}, so it is refused in production: ${HOW_TO_MAKE_A_SECRET}` });
      }
      for (const name of OPTIONAL_SECRETS) {
        const value = env[name];
        const reason = value === undefined || value.length < 16 ? null : weakSecretReason(value);
        if (reason)
          ctx.addIssue({ code: 'custom', path: [name], message: `${reason}, so it is refused in production: ${HOW_TO_MAKE_A_SECRET}` });
      }
    },
    // Zod skips a refinement once another variable has failed; run it anyway, or a production deploy with
    // a bad PORT would learn about the missing secrets only on its next restart.
    { when: () => true },
  );

/**
 * SHUTDOWN_DRAIN_MS unless set: in production 5 s (above two missed health checks 2 s apart, HAProxy's
 * `inter 2s fall 2`), at most half of SHUTDOWN_TIMEOUT_MS; 0 elsewhere.
 */
function defaultDrainMs(nodeEnv: string, shutdownTimeoutMs: number): number {
  return nodeEnv === 'production' ? Math.min(5000, Math.floor(shutdownTimeoutMs / 2)) : 0;
}

/** Variables the system no longer reads, and what replaced them: set, they would be silently ignored. */
export const RETIRED: Record<string, string> = {
  DB_POOL_SIZE: 'was replaced by GATEWAY_DB_POOL_SIZE, WORKER_DB_POOL_SIZE and RECONCILER_DB_POOL_SIZE (pools are sized per role)',
};

/** Variables whose empty value is an error rather than "unset": each would silently fall back to a default. */
export const NO_EMPTY = new Set(['REDIS_PREFIX', 'AUTH_SECRET', 'ADMIN_TOKEN', 'PAYMENT_WEBHOOK_SECRET', 'METRICS_TOKEN']);

export type Config = Omit<z.infer<typeof configSchema>, 'AUTH_SECRET' | 'ADMIN_TOKEN' | 'PAYMENT_WEBHOOK_SECRET' | 'SHUTDOWN_DRAIN_MS'> & {
  SHUTDOWN_DRAIN_MS: number;
  AUTH_SECRET: string;
  ADMIN_TOKEN: string;
  PAYMENT_WEBHOOK_SECRET: string;
};

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`Invalid configuration: ${problems.join('; ')}`);
  }
}

/**
 * Parses the environment once, at start. Every bad variable is reported in one error, so an operator
 * fixes the deployment in one go instead of one restart per variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "not set": shells and compose files produce them easily. Except where an
  // empty value falling back to a default would hide a mistake: a namespace or a secret set to nothing.
  const emptyProblems = [
    ...[...NO_EMPTY].filter((name) => env[name] === '').map((name) => `${name} is set but empty: give it a value or unset it`),
    ...Object.entries(RETIRED)
      .filter(([name]) => env[name] !== undefined && env[name] !== '')
      .map(([name, why]) => `${name} ${why}`),
  ];
  const parsed = configSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')));
  const drainMs = parsed.data
    ? (parsed.data.SHUTDOWN_DRAIN_MS ?? defaultDrainMs(parsed.data.NODE_ENV, parsed.data.SHUTDOWN_TIMEOUT_MS))
    : 0;
  const pairProblems =
    parsed.data && drainMs >= parsed.data.SHUTDOWN_TIMEOUT_MS
      ? [
          `SHUTDOWN_DRAIN_MS (${drainMs}) must be below SHUTDOWN_TIMEOUT_MS (${parsed.data.SHUTDOWN_TIMEOUT_MS}): the requests in flight need time after the drain`,
        ]
      : [];
  if (!parsed.success || emptyProblems.length > 0 || pairProblems.length > 0) {
    throw new ConfigError([
      ...emptyProblems,
      ...pairProblems,
      ...(parsed.error?.issues ?? []).map((issue) => `${issue.path.join('.')} ${issue.message}`),
    ]);
  }
  return {
    ...parsed.data,
    SHUTDOWN_DRAIN_MS: drainMs,
    AUTH_SECRET: parsed.data.AUTH_SECRET ?? DEV_AUTH_SECRET,
    ADMIN_TOKEN: parsed.data.ADMIN_TOKEN ?? DEV_ADMIN_TOKEN,
    PAYMENT_WEBHOOK_SECRET: parsed.data.PAYMENT_WEBHOOK_SECRET ?? DEV_PAYMENT_WEBHOOK_SECRET,
  };
}

/**
 * loadConfig at a process's start: an invalid configuration is told in one line on stderr, every bad
 * variable named (ConfigError's message), and the process exits 2, as for a bad command line. Not a stack
 * trace: the operator who started a container without its secrets reads what to set, nothing else.
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}
