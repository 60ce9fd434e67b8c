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

const schema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    /** MySQL/MariaDB, default `mysql://root@127.0.0.1:3306/flashsale`. */
    DATABASE_URL: z
      .string()
      .regex(/^(mysql|mariadb):\/\//, 'must be a mysql:// or mariadb:// URL')
      .default('mysql://root@127.0.0.1:3306/flashsale'),
    /** Redis, default `redis://127.0.0.1:6379`. */
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
      .default('redis://127.0.0.1:6379'),
    /**
     * Seed nodes of a Redis Cluster, `host:port,host:port,...`; when set, every process talks to the
     * cluster and REDIS_URL is ignored. Unset by default (one Redis at REDIS_URL).
     */
    REDIS_CLUSTER_NODES: hostPortList().optional(),
    /**
     * Redis Sentinel: `host:port,host:port,...` of the sentinels that watch the primary named
     * REDIS_SENTINEL_MASTER; when set, every process asks them where the primary is (again after a
     * failover) and REDIS_URL is ignored. Unset by default. Not together with REDIS_CLUSTER_NODES.
     */
    REDIS_SENTINELS: hostPortList().optional(),
    /** The name the sentinels monitor the primary under (`sentinel monitor <name> ...`), default `mymaster`. */
    REDIS_SENTINEL_MASTER: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ . -')
      .default('mymaster'),
    /** Namespace of every Redis key, default `fs`. Letters, digits, `_`, `-`, `.`, `:` only. */
    REDIS_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ . : -')
      .default('fs'),
    /** Gateway port, default 3000 (0 picks a free port). */
    PORT: intFrom(0, 65535).default(3000),
    /**
     * Seconds a buyer token's `exp`, `nbf` and `iat` may be off, default 5: a gateway whose clock runs a
     * little ahead of the token issuer's does not refuse tokens just issued or about to expire.
     */
    AUTH_CLOCK_TOLERANCE_SECONDS: intFrom(0, 300).default(5),
    /** HS256 key for buyer tokens; required in production, at least 32 characters, and strong there (secret-strength.ts). */
    AUTH_SECRET: SECRET_SHAPES.AUTH_SECRET.optional(),
    /**
     * Bearer token for /api/admin/*; required in production (and strong there: secret-strength.ts), at least 16 characters, and only characters a
     * bearer token can carry (RFC 6750 token68: A-Z a-z 0-9 - . _ ~ + / then trailing =), or no admin call
     * could ever present it.
     */
    ADMIN_TOKEN: SECRET_SHAPES.ADMIN_TOKEN.optional(),
    /** HMAC-SHA256 key of the payment provider's events (Payment-Signature); required in production, at least 32 characters, and strong there (secret-strength.ts). */
    PAYMENT_WEBHOOK_SECRET: SECRET_SHAPES.PAYMENT_WEBHOOK_SECRET.optional(),
    /** Seconds a winner has to pay when the sale does not set its own paymentWindowSeconds, default 900 (10..86400). */
    PAYMENT_WINDOW_SECONDS: intFrom(10, 86_400).default(900),
    /**
     * The rebuy rule of a sale that does not set its own (@flashsale/domain rebuy-rule.ts): the most orders
     * one buyer may open in a sale, live, cancelled and expired together, default 3 (1..1000).
     */
    MAX_ORDERS_PER_BUYER: intFrom(1, 1000).default(3),
    /** Seconds a buyer waits to buy again after their second closed order in a sale, doubled after each later one, default 30 (0..86400). */
    REBUY_COOLDOWN_SECONDS: intFrom(0, 86_400).default(30),
    /**
     * How often each worker looks for unpaid orders past their payBy and for units owed back to Redis,
     * default 1000 ms: an order expires at most about this long after its payBy while MySQL answers.
     */
    EXPIRY_SWEEP_MS: intFrom(50, 600_000).default(1000),
    /** Orders one expiry pass closes per sale and transaction (and returns per Redis call), default 500. */
    EXPIRY_BATCH_SIZE: intFrom(1, 10_000).default(500),
    /** pino level, default `info`. */
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Purchases one buyer may send per second to one gateway process before 429, default 10. */
    RATE_LIMIT_PER_SECOND: intFrom(1, 1_000_000).default(10),
    /**
     * Purchases (and reservation lookups) one client address may send per second to one gateway process
     * before 429, default 1000; 0 = no limit (a load test from one machine, or a proxy that limits for us).
     */
    RATE_LIMIT_PER_ADDRESS_PER_SECOND: intFrom(0, 10_000_000).default(1000),
    /**
     * Unauthenticated reads (GET /api/sales/:id, /readyz) one client address may send per second to one
     * gateway process before 429, default 200; 0 = no limit. A miss costs MySQL a query: the budget is
     * what keeps an outsider's flood of made-up ids from reaching it unbounded.
     */
    PUBLIC_READS_PER_ADDRESS_PER_SECOND: intFrom(0, 10_000_000).default(200),
    /** How long a gateway remembers that MySQL has no sale of an id, default 1000; 0 = never (every miss asks MySQL). */
    SALE_MISS_TTL_MS: intFrom(0, 60_000).default(1000),
    /**
     * Joins of a waiting room (each one Redis call, and a place) one buyer may send per second to one
     * gateway process before 429, default 2: a buyer joins once; a second join answers the same place.
     */
    QUEUE_JOINS_PER_SECOND: intFrom(1, 1_000_000).default(2),
    /**
     * Joins one client address may send per second to one gateway process before 429, default 20; 0 = no
     * limit (a load test from one machine, or a proxy that limits for us). A farm of accounts behind one
     * address joins at this pace at most; an honest buyer refused before the start loses nothing (the
     * draw at the start is random) and after it a second.
     */
    QUEUE_JOINS_PER_ADDRESS_PER_SECOND: intFrom(0, 10_000_000).default(20),
    /**
     * The buyer-token claim by which the shop's identity system flags an account, default `flagged`: a
     * token with it set to true is answered from the shadow queue (told waiting, never admitted).
     */
    QUEUE_FLAG_CLAIM: z.string().regex(/^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/, 'must be a claim name').default('flagged'),
    /**
     * Payment events one client address may post per second to one gateway process before 429, default
     * 200; 0 = no limit. Checked before the signature: an unsigned flood is turned away for the cost of a
     * count, and a provider's retry (it retries on 429) comes through the next second.
     */
    PAYMENT_EVENTS_PER_ADDRESS_PER_SECOND: intFrom(0, 10_000_000).default(200),
    /**
     * Proxies in front of the gateway whose X-Forwarded-For is trusted, default 0 (none: the socket's
     * address is the client's). With N, the client is the Nth address from the right of X-Forwarded-For.
     */
    TRUST_PROXY: intFrom(0, 16).default(0),
    /** Connections one client address may hold open on one gateway process, default 256; 0 = no cap (behind a proxy that caps). */
    MAX_CONNECTIONS_PER_ADDRESS: intFrom(0, 1_000_000).default(256),
    /** Open connections of one gateway process in all; default: below the process's open-file limit, with room for its own. */
    MAX_CONNECTIONS: intFrom(1, 10_000_000).optional(),
    /** Time a client has to send a request's headers, default 5000 ms (slow-header attacks end here). */
    HTTP_HEADERS_TIMEOUT_MS: intFrom(100, 600_000).default(5000),
    /** Time a client has to send a whole request, body included, default 10000 ms (slow bodies end here). */
    HTTP_REQUEST_TIMEOUT_MS: intFrom(100, 600_000).default(10_000),
    /** How long an idle keep-alive connection stays open, default 5000 ms (set it above a proxy's idle timeout). */
    HTTP_KEEP_ALIVE_TIMEOUT_MS: intFrom(100, 600_000).default(5000),
    /**
     * Largest request body the gateway reads, in bytes, default 1024: a purchase carries `{"quantity":n}`
     * and a sale create a few hundred bytes, so anything larger is refused with 413 before it is parsed.
     */
    HTTP_MAX_BODY_BYTES: intFrom(64, 1_048_576).default(1024),
    /**
     * The address every process's internal port (the gateway's METRICS_PORT, WORKER_PORT,
     * RECONCILER_PORT: /metrics, /healthz, /readyz) listens on, default 127.0.0.1: nothing outside the
     * host reaches it unless the operator says so (`0.0.0.0` or an internal interface's address, for a
     * Prometheus on another host or container).
     */
    METRICS_HOST: z
      .string()
      .regex(/^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*|[0-9A-Fa-f:.]+)$/, 'must be a host name or an IP address')
      .default('127.0.0.1'),
    /**
     * When set, /metrics answers only `Authorization: Bearer <METRICS_TOKEN>` (401 otherwise; /healthz and
     * /readyz stay open for orchestrators' probes). At least 16 characters of a bearer token; strong in
     * production (secret-strength.ts). Unset by default: the port is on loopback.
     */
    METRICS_TOKEN: z
      .string()
      .min(16, 'must be at least 16 characters')
      .regex(/^[A-Za-z0-9._~+/-]+=*$/, 'must contain only A-Z a-z 0-9 - . _ ~ + / (and trailing =), the characters of a bearer token')
      .optional(),
    /**
     * Connections a process's internal port holds at once, default 32 (one address at most a quarter of
     * them): past it a new one is closed at once. The gateway keeps these descriptors out of PORT's
     * share of its open-file limit, so a flood of the metrics port never starves the buyers' port.
     */
    METRICS_MAX_CONNECTIONS: intFrom(4, 10_000).default(32),
    /** Port of the gateway's /metrics (internal network only; not served on PORT), default 3003 (0 picks a free port). */
    METRICS_PORT: intFrom(0, 65535).default(3003),
    /**
     * Deadline of every Redis command the system sends (blocking reads excepted, which carry their own),
     * default 1000 ms: past it a buyer gets 503 SERVICE_UNAVAILABLE at once instead of waiting on a hung Redis.
     */
    REDIS_COMMAND_TIMEOUT_MS: intFrom(50, 60_000).default(1000),
    /**
     * Deadline of the Redis commands of the worker and the reconciler, default 30000 ms: longer than a
     * request's, since a rebuild script over a large sale may rightly take seconds, but never unbounded.
     */
    REDIS_BACKGROUND_COMMAND_TIMEOUT_MS: intFrom(1000, 600_000).default(30_000),
    /**
     * Replicas that must hold a reservation before the buyer is answered 202 (Redis WAIT, in the same
     * round trip as the reserve script), default 0 (answer at once). Set to the number of replicas of the
     * primary (of every master, on a cluster): a failover then cannot lose a reservation answered 202,
     * whichever replica it promotes. Fewer is not enough: WAIT counts any N replicas, and the failover
     * may promote one that had not acknowledged (a CI run lost 2 such 202s with 1 of 2 under Sentinel).
     * A reservation fewer replicas acknowledged within REDIS_WAIT_TIMEOUT_MS is answered 503, and the
     * buyer's retry learns its outcome (409 with the reservation, or a new one); with every replica
     * required, one replica down makes every purchase 503. See docs/operations.md, "Waiting for a replica".
     */
    REDIS_WAIT_REPLICAS: intFrom(0, 16).default(0),
    /** How long the gateway waits for REDIS_WAIT_REPLICAS replicas, default 100 ms. */
    REDIS_WAIT_TIMEOUT_MS: intFrom(1, 10_000).default(100),
    /** Longest a gateway's MySQL statement may run (MariaDB's max_statement_time, lock waits included), default 2000 ms. */
    DB_STATEMENT_TIMEOUT_MS: intFrom(100, 600_000).default(2000),
    /**
     * Deadline of a read or admin request (not a purchase, whose one Redis call has its own, nor a
     * reconcile, which waits for the drain), default 3000 ms: past it the client gets 503 SERVICE_UNAVAILABLE.
     */
    REQUEST_DEADLINE_MS: intFrom(100, 600_000).default(3000),
    /**
     * How long a gateway trusts a sale's sold-out or ended verdict without news from the reconciler,
     * default 1000 ms: a safety net should a sale event be lost; 0 turns the verdict cache off (every
     * purchase then asks Redis).
     */
    SALE_VERDICT_TTL_MS: intFrom(0, 60_000).default(1000),
    /**
     * The most holders of one sold-out or ended sale a gateway keeps in memory (about 100 bytes each) to
     * answer their retries without Redis, default 100000; a sale with more is answered by the reserve
     * script (one Redis call, still correct).
     */
    SALE_VERDICT_MAX_HOLDERS: intFrom(0, 10_000_000).default(100_000),
    /**
     * How often a gateway reads from MySQL which sales are live (to answer 503 SALE_PAUSED, not 404, for
     * a live sale Redis lost), default 2000 ms. Keep DB_POOL_IDLE_TIMEOUT_MS under twice this value, or
     * the refresh keeps a second connection of an idle gateway open.
     */
    LIVE_SALES_REFRESH_MS: intFrom(100, 600_000).default(2000),
    /** How long a stopping process may take to finish what it holds before it exits anyway, default 10000 ms. */
    SHUTDOWN_TIMEOUT_MS: intFrom(100, 600_000).default(10_000),
    /**
     * How long a stopping gateway answers /readyz 503 while it still serves (every response then closing
     * its connection), before it stops accepting: the time a load balancer's health check needs to take
     * it out of rotation. Default 5000 ms in production (at most half of SHUTDOWN_TIMEOUT_MS), 0 otherwise
     * (a laptop's Ctrl-C stops at once); must be below SHUTDOWN_TIMEOUT_MS.
     */
    SHUTDOWN_DRAIN_MS: intFrom(0, 600_000).optional(),
    /** Entries a worker takes from one sale's stream per MySQL transaction, default 500. */
    WORKER_BATCH_SIZE: intFrom(1, 5000).default(500),
    /** Rounds of batches a worker writes to MySQL at once, default 2: the next is at MySQL when one commits. */
    WORKER_WRITES_IN_FLIGHT: intFrom(1, 16).default(2),
    /** How long an idle worker waits before polling the streams again, default 5 ms. */
    WORKER_IDLE_MS: intFrom(1, 10_000).default(5),
    /**
     * After a read of a sale gave fewer entries than a whole batch (or none), the worker reads that sale
     * again no sooner than this, default 20 ms (0: at once). What arrives meanwhile then goes to MySQL as
     * one batch rather than many small ones: at a moderate rate, small batches cost the workers and MySQL
     * most of their CPU per order (a transaction and a round of reads each; docs/performance.md). An
     * order reaches MySQL up to this much later; the 202 is not delayed.
     */
    WORKER_BATCH_WAIT_MS: intFrom(0, 10_000).default(20),
    /** Entries pending this long on a consumer are taken over by another worker, default 15000 ms. */
    WORKER_CLAIM_IDLE_MS: intFrom(100, 3_600_000).default(15_000),
    /** Deliveries after which a failing entry goes to the dead-letter stream, default 5. */
    WORKER_MAX_DELIVERIES: intFrom(1, 1000).default(5),
    /** How often a worker reads the list of published sales again (a new sale is polled from then on), default 1000 ms. */
    WORKER_SALES_REFRESH_MS: intFrom(10, 600_000).default(1000),
    /**
     * Every live sale's stream is read at least this often even when no gateway signalled work on it
     * (the signal is a hint: one lost to a crash or a dropped subscription is made up here), default 250 ms,
     * unless WORKER_SWEEP_PER_SECOND stretches it.
     */
    WORKER_SWEEP_MS: intFrom(10, 600_000).default(250),
    /**
     * The most sales a worker sweeps (reads without a signal) per second, default 1000: with more live
     * sales than this x WORKER_SWEEP_MS / 1000, each is swept every (sales / this) seconds, so an idle
     * worker's cost does not grow with the number of sales.
     */
    WORKER_SWEEP_PER_SECOND: intFrom(1, 1_000_000).default(1000),
    /**
     * Most MySQL connections one gateway process opens, default 4: it only reads (sale, stats, a
     * reservation's order) and creates sales; purchases never touch MySQL. Opened when needed, released
     * when idle. Budget: see DB_*_POOL_SIZE in the README (processes x pool <= max_connections).
     */
    GATEWAY_DB_POOL_SIZE: intFrom(1, 500).default(4),
    /** Most MySQL connections one worker process opens, default 10: its order batches run side by side. */
    WORKER_DB_POOL_SIZE: intFrom(1, 500).default(10),
    /** Most MySQL connections the reconciler (and the reconcile command) opens, default 4. */
    RECONCILER_DB_POOL_SIZE: intFrom(1, 500).default(4),
    /**
     * How long a pooled MySQL connection may sit unused before it is closed (one per process is kept),
     * default 3000 ms. The driver hands out the connection idle longest first, so a query every P ms
     * keeps about this / P connections open: under twice LIVE_SALES_REFRESH_MS (4000 by default) an
     * idle gateway comes down to one.
     */
    DB_POOL_IDLE_TIMEOUT_MS: intFrom(1000, 3_600_000).default(3000),
    /** Seconds a paused sale asks buyers to wait before retrying (Retry-After), default 2. */
    PAUSED_RETRY_AFTER_SECONDS: intFrom(1, 3600).default(2),
    /**
     * How old a gateway's copy of a queued sale's door may be before the next buyer's status poll reads
     * (and moves) it again, default 250 ms: each gateway makes at most 1000 / this admit calls per second
     * per queued sale its buyers ask about, whatever the crowd.
     */
    DOOR_FRONTIER_MAX_AGE_MS: intFrom(10, 10_000).default(250),
    /** Gateway processes (node:cluster) sharing PORT, default 1 (no cluster); one per core uses them all. */
    GATEWAY_WORKERS: intFrom(1, 256).default(1),
    /** Port of each worker's /metrics and /healthz, default 3002 (0 picks a free port). */
    WORKER_PORT: intFrom(0, 65535).default(3002),
    /** Port of the reconciler's /metrics and /healthz, default 3001 (0 picks a free port). */
    RECONCILER_PORT: intFrom(0, 65535).default(3001),
    /** How often the reconciler checks every live sale's Redis state, default 1000 ms. */
    RECONCILER_WATCH_MS: intFrom(50, 60_000).default(1000),
    /** A sale younger than this is not judged by the reconciler: its publish may not have landed yet, default 10000 ms. */
    RECONCILER_PUBLISH_GRACE_MS: intFrom(0, 3_600_000).default(10_000),
    /**
     * How long a sale create may stay unfinished (its request died, or could not take back a failed
     * publish) before the reconciler abandons it, on MySQL's clock, default 30000 ms. Keep it above
     * REQUEST_DEADLINE_MS: a create still running must not be abandoned under it.
     */
    RECONCILER_CREATE_GRACE_MS: intFrom(1000, 3_600_000).default(30_000),
    /** How long acknowledged entries (orders already, or dead letters) stay in a sale's stream, default 60000 ms. */
    RECONCILER_STREAM_RETENTION_MS: intFrom(0, 604_800_000).default(60_000),
    /**
     * The most entries a sale's stream keeps for RECONCILER_STREAM_RETENTION_MS, default 10000: beyond
     * it, acknowledged entries go at the next watch whatever their age, so a stream's length is bounded
     * at any accept rate (what is in flight, plus what was accepted since the checkpoint, plus this).
     */
    RECONCILER_STREAM_RETENTION_ENTRIES: intFrom(0, 100_000_000).default(10_000),
    /**
     * The most sales the reconciler watches per second, default 200: each live sale is looked at every
     * RECONCILER_WATCH_MS, or every (sales / this) seconds when there are more; a sale that changed at
     * its last look comes first.
     */
    RECONCILER_WATCH_PER_SECOND: intFrom(1, 1_000_000).default(200),
    /**
     * The longest one step of the reconciler's watch (a look at a sale, the list of sales, a round of
     * retirements) may take before it is passed over, logged and counted, default 5000 ms: a look that
     * hangs (a Redis Cluster command waiting for a node, a frozen server) must not stop every other
     * sale's watch. A command of its own still waits up to REDIS_BACKGROUND_COMMAND_TIMEOUT_MS.
     */
    RECONCILER_WATCH_STEP_TIMEOUT_MS: intFrom(100, 600_000).default(5000),
    /** The most sales one audit run checks per second of AUDIT_EVERY_MS, default 50 (see RECONCILER_AUDIT_IDLE_MS). */
    RECONCILER_AUDIT_PER_SECOND: intFrom(1, 1_000_000).default(50),
    /**
     * A sale whose Redis state has not changed since its last clean audit is audited again only after this
     * long, default 600000 ms (10 minutes): an idle sale costs nothing between; a sale that changed is
     * audited at the next run.
     */
    RECONCILER_AUDIT_IDLE_MS: intFrom(100, 86_400_000).default(600_000),
    /** How often the audit job checks every live sale's ledger, default 5000 ms. */
    AUDIT_EVERY_MS: intFrom(100, 3_600_000).default(5000),
    /** How long a reconciliation waits for the stream to drain before it fails and is retried, default 120000 ms. */
    RECONCILE_DRAIN_TIMEOUT_MS: intFrom(100, 3_600_000).default(120_000),
    /**
     * Reconciliations of different sales one reconciler runs side by side, default 4 (one sale never has
     * two). Each holds a MySQL connection of its own for its sale lock, besides RECONCILER_DB_POOL_SIZE.
     */
    RECONCILER_CONCURRENCY: intFrom(1, 64).default(4),
    /**
     * How long after its end a sale is still watched and audited, on MySQL's clock, default 3600000 ms
     * (an hour): its stream may hold entries written before the end, and a loss found then is still counted.
     */
    RECONCILER_WATCH_AFTER_END_MS: intFrom(0, 2_592_000_000).default(3_600_000),
    /**
     * How long after its end (on Redis's clock) a drained sale stays in the workers' list of sales to
     * poll, default 60000 ms; then the reconciler takes it out, so idle workers do not poll every sale
     * ever published.
     */
    RECONCILER_RETIRE_AFTER_END_MS: intFrom(0, 2_592_000_000).default(60_000),
    /** How long a dashboard sign-in lasts (GET /admin/), default 28800 s (8 hours); then the operator signs in again. */
    ADMIN_SESSION_TTL_SECONDS: intFrom(60, 604_800).default(28_800),
    /**
     * Whether the dashboard's session cookie is marked Secure (sent over HTTPS only): `1` or `0`, default
     * `1` in production (behind a TLS-terminating proxy) and `0` otherwise (plain http on a laptop or CI).
     */
    ADMIN_COOKIE_SECURE: z.enum(['0', '1']).optional(),
    /**
     * Failed admin authentications (a wrong admin token, as a bearer token or at the dashboard's sign-in)
     * one client address may make per minute on one gateway process, default 10: past it every admin
     * authentication from that address is refused with 429 until the minute ends, the token unchecked.
     */
    ADMIN_AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: intFrom(1, 1_000_000).default(10),
    /**
     * Failed admin authentications from all addresses together per minute on one gateway process, default
     * 100: past it every admin authentication is refused with 429 until the minute ends (a guess spread
     * over many addresses is held too; operators wait out the minute with it).
     */
    ADMIN_AUTH_FAILURES_PER_MINUTE: intFrom(1, 10_000_000).default(100),
    /**
     * The Host values the dashboard and /api/admin answer, comma-separated: `name` (any port) or
     * `name:port`, `*` for any. Default: localhost, 127.0.0.1, [::1] and this machine's hostname, any
     * port. Anything else is refused with 403 HOST_NOT_ALLOWED, so a page that rebinds its own name to
     * this address (DNS rebinding) cannot reach the admin surface from an operator's browser.
     */
    ADMIN_ALLOWED_HOSTS: z
      .string()
      .transform((list) => list.split(',').map((host) => host.trim().toLowerCase()))
      .refine(
        (hosts) => hosts.every((host) => host === '*' || /^([a-z0-9_-]+(\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])(:\d{1,5})?$/.test(host)),
        'must be host or host:port values, comma-separated (or *)',
      )
      .optional(),
    /**
     * Where the buyer's page (GET /s/:saleId) sends a buyer to pay an order, a URL with `{reservationId}`
     * in it (the shop's checkout). Unset: outside production the page pays through the demo's payment
     * provider; in production it says the shop will ask for the payment.
     */
    BUYER_PAGE_PAYMENT_URL: z
      .string()
      .max(2048)
      .refine((url) => /^https?:\/\/[^\s]+$/.test(url) && url.includes('{reservationId}'), 'must be an http(s) URL with {reservationId} in it')
      .optional(),
    /**
     * Where the buyer's page sends a buyer who has no token (the shop's sign-in), a URL that may hold
     * `{return}` (the page's own address, to come back to). Unset: outside production the page offers a
     * development sign-in; in production it asks the buyer to sign in at the shop.
     */
    BUYER_PAGE_SIGN_IN_URL: z
      .string()
      .max(2048)
      .refine((url) => /^https?:\/\/[^\s]+$/.test(url), 'must be an http(s) URL')
      .optional(),
    /** How often the dashboard's live view of a sale is read and pushed (once for all its viewers), default 1000 ms. */
    DASHBOARD_INTERVAL_MS: intFrom(100, 60_000).default(1000),
    /**
     * How long a dashboard session may go unused before it ends, default 1800 s (30 minutes): each
     * request the page makes for the operator (loading, opening a stream, a control) starts it again; an
     * open live stream alone does not. Never beyond ADMIN_SESSION_TTL_SECONDS.
     */
    ADMIN_SESSION_IDLE_SECONDS: intFrom(60, 604_800).default(1800),
    /** Live streams (GET /admin/live) one dashboard session may hold open on one gateway process, default 4; past it `429 LIVE_STREAM_LIMIT`. */
    DASHBOARD_STREAMS_PER_SESSION: intFrom(1, 256).default(4),
    /** Live streams one gateway process holds open for all sessions, default 32; past it `429 LIVE_STREAM_LIMIT`. */
    DASHBOARD_STREAMS_PER_PROCESS: intFrom(1, 4096).default(32),
    /**
     * MySQL connections of the dashboard's own pool in each gateway process, default 2: its live views and
     * the checks before a stream opens read through it, never through GATEWAY_DB_POOL_SIZE's (the buyers').
     */
    DASHBOARD_DB_POOL_SIZE: intFrom(1, 16).default(2),
    /** How often the dashboard's history takes a point of every live sale and of the process, default 1000 ms. */
    DASHBOARD_HISTORY_STEP_MS: intFrom(100, 60_000).default(1000),
    /** How far back the dashboard's charts reach (the history each gateway process keeps), default 900 s (15 minutes). */
    DASHBOARD_HISTORY_SECONDS: intFrom(10, 86_400).default(900),
    /** The most sales the history follows at once (the newest live ones), default 16: its memory is bounded by it. */
    DASHBOARD_HISTORY_MAX_SALES: intFrom(1, 1000).default(16),
  })
  .superRefine(
    (env, ctx) => {
      if (env.REDIS_CLUSTER_NODES && env.REDIS_SENTINELS) {
        ctx.addIssue({ code: 'custom', path: ['REDIS_SENTINELS'], message: 'cannot be set together with REDIS_CLUSTER_NODES: Redis is either a cluster or a primary watched by sentinels' });
      }
      if (env.NODE_ENV !== 'production') return;
      if (!env.AUTH_SECRET) ctx.addIssue({ code: 'custom', path: ['AUTH_SECRET'], message: 'is required in production' });
      if (!env.ADMIN_TOKEN) ctx.addIssue({ code: 'custom', path: ['ADMIN_TOKEN'], message: 'is required in production' });
      if (!env.PAYMENT_WEBHOOK_SECRET) ctx.addIssue({ code: 'custom', path: ['PAYMENT_WEBHOOK_SECRET'], message: 'is required in production' });
      // A published or patterned secret is no secret (secret-strength.ts states the rule).
      for (const [name, shape] of Object.entries(SECRET_SHAPES)) {
        const value = env[name as keyof typeof SECRET_SHAPES];
        const reason = value === undefined || !shape.safeParse(value).success ? null : weakSecretReason(value);
        if (reason) ctx.addIssue({ code: 'custom', path: [name], message: `${reason}, so it is refused in production: ${HOW_TO_MAKE_A_SECRET}` });
      }
      for (const name of OPTIONAL_SECRETS) {
        const value = env[name];
        const reason = value === undefined || value.length < 16 ? null : weakSecretReason(value);
        if (reason) ctx.addIssue({ code: 'custom', path: [name], message: `${reason}, so it is refused in production: ${HOW_TO_MAKE_A_SECRET}` });
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
const RETIRED: Record<string, string> = {
  DB_POOL_SIZE: 'was replaced by GATEWAY_DB_POOL_SIZE, WORKER_DB_POOL_SIZE and RECONCILER_DB_POOL_SIZE (pools are sized per role)',
};

/** Variables whose empty value is an error rather than "unset": each would silently fall back to a default. */
const NO_EMPTY = new Set(['REDIS_PREFIX', 'AUTH_SECRET', 'ADMIN_TOKEN', 'PAYMENT_WEBHOOK_SECRET', 'METRICS_TOKEN']);

export type Config = Omit<z.infer<typeof schema>, 'AUTH_SECRET' | 'ADMIN_TOKEN' | 'PAYMENT_WEBHOOK_SECRET' | 'SHUTDOWN_DRAIN_MS'> & {
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
  const parsed = schema.safeParse(Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')));
  const drainMs = parsed.data ? (parsed.data.SHUTDOWN_DRAIN_MS ?? defaultDrainMs(parsed.data.NODE_ENV, parsed.data.SHUTDOWN_TIMEOUT_MS)) : 0;
  const pairProblems =
    parsed.data && drainMs >= parsed.data.SHUTDOWN_TIMEOUT_MS
      ? [`SHUTDOWN_DRAIN_MS (${drainMs}) must be below SHUTDOWN_TIMEOUT_MS (${parsed.data.SHUTDOWN_TIMEOUT_MS}): the requests in flight need time after the drain`]
      : [];
  if (!parsed.success || emptyProblems.length > 0 || pairProblems.length > 0) {
    throw new ConfigError([...emptyProblems, ...pairProblems, ...(parsed.error?.issues ?? []).map((issue) => `${issue.path.join('.')} ${issue.message}`)]);
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
