/**
 * `npm run image:check`: the image `npm run image:build` made, run. First every role alone (podman run,
 * on this machine's Redis and MariaDB, host network): as the `node` user, on a read-only root filesystem,
 * refused without the production secrets, then migrate, a gateway, a worker and a reconciler selling a
 * small sale, the ledger checked, `reconcile --sale`, and a clean exit on SIGTERM. Then the whole stack
 * from the compose files, by Debian's docker-compose (v1) through podman's Docker-compatible API: the
 * demo's crowd through HAProxy at its published port, the ledger checked; a second crowd during a rolling
 * restart of the gateway containers and with a worker container SIGKILLed, nothing lost. Everything it
 * started is removed at the end, whatever happened. Exit 1 when a check fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection } from 'mariadb';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { createRedis, createSaleStore, type SaleStore } from '@flashsale/redis-store';
import { createPrisma, poolConfigFromUrl, type PrismaClient } from '@flashsale/order-store';
import {
  createHttpClient,
  faultLedgerOf,
  freePort,
  ledgerOf,
  mapConcurrently,
  signBuyerTokens,
  type HttpClient,
  type HttpResult,
} from '@flashsale/harness';
import { DEFAULT_CACHE, ROOT, builtAppImage, podman, podmanEnv, run, secondsSince, type RunResult } from './podman.ts';

const COMMAND = {
  usage: `usage: npm run image:check -- [--only roles|compose] [--cache <dir>]

Runs the image npm run image:build made (podman and Debian's docker-compose, as root):
  roles     each role from the image (migrate, gateway, worker, reconciler, reconcile --sale) as the
            node user on a read-only root filesystem, refused without the production secrets, selling a
            sale on this machine's Redis and MariaDB (REDIS_URL, DATABASE_URL_image), the ledger checked
  compose   infra/docker-compose.yml + docker-compose.app.yml up through podman's Docker API: the demo's
            crowd through HAProxy, the ledger checked; a rolling restart of the gateways and a worker
            killed during a second crowd, nothing lost
Everything it started is removed at the end. Exit 1 when a check fails.

  --only <part>   roles or compose (default: both)
  --cache <dir>   where image:build keeps its files (default ${DEFAULT_CACHE})`,
  options: { only: { type: 'string' }, cache: { type: 'string' } },
} as const;

const { values: options } = parseCommandLine(COMMAND);
if (options.only !== undefined && options.only !== 'roles' && options.only !== 'compose')
  exitWithUsage(COMMAND, `--only takes roles or compose, not ${options.only}`);

const env = podmanEnv(options.cache ?? DEFAULT_CACHE);
/** Every container this run starts carries it (compose's carry their project's name), for the cleanup. */
/** The application's image, once found. */
let IMAGE = '';
const RUN = `fscheck${process.pid}`;
/** The label compose gives what it makes, its value the project (this run's: RUN). */
const COMPOSE_PROJECT = 'com.docker.compose.project';
const SECRETS = {
  AUTH_SECRET: randomBytes(24).toString('hex'),
  ADMIN_TOKEN: randomBytes(12).toString('hex'),
  PAYMENT_WEBHOOK_SECRET: randomBytes(24).toString('hex'),
};
const ROLES = [['migrate'], ['gateway'], ['worker'], ['reconciler'], ['reconcile', '--sale', '1']] as const;

const step = (text: string) => console.log(`\n== ${text}`);
const failures: string[] = [];
/** One check: printed, and remembered when it fails. */
function check(what: string, ok: boolean, detail = ''): boolean {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
  if (!ok) failures.push(what);
  return ok;
}
class CheckAborted extends Error {
  override readonly name = 'CheckAborted';
}
/** A check whose failure leaves nothing worth checking after it. */
function must(what: string, ok: boolean, detail = ''): void {
  if (!check(what, ok, detail)) throw new CheckAborted(what);
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new CheckAborted(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(500);
  }
}

async function httpStatus(url: string): Promise<number | undefined> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
  await response.arrayBuffer();
  return response.status;
}

/** The last lines of a container's output, for a failure's report. */
async function logsOf(name: string): Promise<string> {
  const { stdout, stderr } = await podman(env, ['logs', '--tail', '20', name], { allowFailure: true });
  return `${stdout}${stderr}`.trim();
}

// ---------------------------------------------------------------------------------------------------------
// The roles, one container each, on this machine's Redis and MariaDB.

async function checkRoles(): Promise<void> {
  const config = loadConfig({ ...process.env, NODE_ENV: 'development' });
  const database = new URL(config.DATABASE_URL);
  database.pathname = `${database.pathname}_image`;
  const databaseUrl = database.toString();
  const { database: dbName, ...server } = poolConfigFromUrl(databaseUrl);
  const admin = await createConnection(server);
  await admin.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
  await admin.end();
  const roleEnv = { REDIS_URL: config.REDIS_URL, REDIS_PREFIX: `image-check-${RUN}`, DATABASE_URL: databaseUrl, LOG_LEVEL: 'info' };
  const envArgs = (vars: Record<string, string>) => Object.entries(vars).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  const runArgs = ['--network=host', '--read-only', '--label', `org.flashsale.check=${RUN}`];

  step('the image: who it runs as');
  const user = (await podman(env, ['image', 'inspect', '--format', '{{.Config.User}}', IMAGE])).stdout.trim();
  check('the image runs as the node user', user === 'node', `USER ${user}`);
  const id = await podman(env, ['run', '--rm', ...runArgs, '--entrypoint', 'id', IMAGE]);
  check('a container of it runs as node (uid 1000)', /^uid=1000\(node\)/.test(id.stdout), id.stdout.trim());
  const write = await podman(
    env,
    ['run', '--rm', '--network=host', '--entrypoint', 'node', IMAGE, '-e', "require('fs').writeFileSync('/app/package.json', '')"],
    { allowFailure: true },
  );
  check(
    'node cannot write the application (/app owned by root), even without --read-only',
    write.code !== 0 && /EACCES/.test(write.stderr),
    /Error: \S+/.exec(write.stderr)?.[0] ?? '',
  );

  step("every role refused without the production secrets (NODE_ENV=production is the image's)");
  for (const role of ROLES) {
    const refused = await podman(env, ['run', '--rm', ...runArgs, ...envArgs(roleEnv), IMAGE, ...role], { allowFailure: true });
    const said = `${refused.stdout}${refused.stderr}`;
    check(
      `${role.join(' ')} without secrets: refused`,
      refused.code !== 0 && /AUTH_SECRET/.test(said) && /ADMIN_TOKEN/.test(said),
      `exit ${refused.code}, ${said.trim().split('\n')[0]!.slice(0, 160)}`,
    );
  }

  const withSecrets = { ...roleEnv, ...SECRETS };
  step('migrate');
  const migrated = await podman(env, ['run', '--rm', ...runArgs, ...envArgs(withSecrets), IMAGE, 'migrate'], { allowFailure: true });
  must(
    'migrate applies the migrations',
    migrated.code === 0 && /applied/.test(migrated.stdout),
    `exit ${migrated.code}, ${(migrated.stdout + migrated.stderr).trim().split('\n').pop()}`,
  );

  step('gateway (two processes), worker, reconciler: detached containers, read-only');
  const [port, metricsPort, workerPort, reconcilerPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const processes = {
    gateway: {
      vars: { PORT: String(port), METRICS_PORT: String(metricsPort), GATEWAY_WORKERS: '2' },
      ready: `http://127.0.0.1:${port}/readyz`,
    },
    worker: { vars: { WORKER_PORT: String(workerPort) }, ready: `http://127.0.0.1:${workerPort}/readyz` },
    reconciler: { vars: { RECONCILER_PORT: String(reconcilerPort) }, ready: `http://127.0.0.1:${reconcilerPort}/readyz` },
  };
  for (const [role, p] of Object.entries(processes)) {
    await podman(env, ['run', '-d', '--name', `${RUN}-${role}`, ...runArgs, ...envArgs({ ...withSecrets, ...p.vars }), IMAGE, role]);
  }
  for (const [role, p] of Object.entries(processes)) {
    const started = performance.now();
    try {
      await until(`${role} ready`, 90_000, async () => ((await httpStatus(p.ready)) === 200 ? true : undefined));
    } catch (error) {
      console.log(await logsOf(`${RUN}-${role}`));
      throw error;
    }
    check(`${role} ready (/readyz 200)`, true, secondsSince(started));
  }

  step('a sale of 30 units, 40 buyers');
  const redis = createRedis(config.REDIS_URL);
  const store = createSaleStore(redis, roleEnv.REDIS_PREFIX);
  const prisma = createPrisma(databaseUrl, 2);
  const http = createHttpClient(`http://127.0.0.1:${port}`, 8);
  try {
    const saleId = await createSale(http, { stock: 30, perUserLimit: 1 });
    const buyers = Array.from({ length: 40 }, (_, i) => `image-${i}`);
    const tokens = signBuyerTokens(buyers, { secret: SECRETS.AUTH_SECRET });
    const answers = await mapConcurrently(
      buyers.map((userId, i) => ({ userId, token: tokens[i]! })),
      8,
      async ({ userId, token }) => ({ userId, answer: await purchase(http, saleId, token, 1) }),
    );
    const accepted = new Map<string, { userId: string; quantity: number }>();
    for (const { userId, answer } of answers)
      if (answer.status === 202) accepted.set(answer.body.reservationId as string, { userId, quantity: 1 });
    const refusals = answers.filter((a) => a.answer.status !== 202).map((a) => String(a.answer.body.code));
    check(
      '30 accepted, 10 SOLD_OUT',
      accepted.size === 30 && refusals.length === 10 && refusals.every((c) => c === 'SOLD_OUT'),
      `${accepted.size} accepted, refusals ${[...new Set(refusals)].join(',')}`,
    );
    await store.sale(saleId).waitForDrain(60_000);
    const ledger = await ledgerOf(store, prisma, saleId, accepted);
    check(
      'the ledger: every 202 an order, none doubled or unexpected, units + remaining = stock',
      ledger.lost.length + ledger.duplicated.length + ledger.unexpected.length === 0 &&
        ledger.unitsInDb + ledger.remaining === ledger.stock &&
        ledger.unitsInDb === 30,
      JSON.stringify(ledger),
    );

    step("reconcile --sale (the runbook's command)");
    const reconciled = await podman(
      env,
      ['run', '--rm', ...runArgs, ...envArgs({ ...withSecrets, LOG_LEVEL: 'warn' }), IMAGE, 'reconcile', '--sale', String(saleId)],
      { allowFailure: true },
    );
    let judgement: unknown;
    try {
      judgement = (JSON.parse(reconciled.stdout) as { judgement?: unknown }).judgement;
    } catch {
      judgement = `not JSON: ${reconciled.stdout.slice(0, 200)}${reconciled.stderr.slice(0, 200)}`;
    }
    check(
      'reconcile --sale judges the sale intact',
      reconciled.code === 0 && judgement === 'intact',
      `exit ${reconciled.code}, judgement ${String(judgement)}`,
    );
  } finally {
    http.close();
    await store.deleteAllKeys();
    redis.disconnect();
    await prisma.$disconnect();
  }

  step('SIGTERM: each process drains and exits 0');
  const names = Object.keys(processes).map((role) => `${RUN}-${role}`);
  await Promise.all(names.map((name) => podman(env, ['stop', '-t', '30', name], { allowFailure: true })));
  for (const name of names) {
    const code = (await podman(env, ['inspect', '--format', '{{.State.ExitCode}}', name])).stdout.trim();
    check(`${name.slice(RUN.length + 1)} exited ${code} on SIGTERM`, code === '0');
  }
  await podman(env, ['rm', '-f', ...names], { allowFailure: true });
  const dropping = await createConnection(server);
  await dropping.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
  await dropping.end();
}

async function createSale(http: HttpClient, { stock, perUserLimit }: { stock: number; perUserLimit: number }): Promise<number> {
  const created = await http.send('POST', '/api/admin/sales', {
    headers: { authorization: `Bearer ${SECRETS.ADMIN_TOKEN}` },
    body: {
      name: 'image:check',
      stock,
      perUserLimit,
      startsAt: new Date(Date.now() - 1000).toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    },
  });
  must(
    `a sale of ${stock} created through the admin API`,
    created.status === 201,
    `${created.status} ${JSON.stringify(created.body).slice(0, 200)}`,
  );
  return created.body.id as number;
}

function purchase(http: HttpClient, saleId: number, token: string, quantity: number): Promise<HttpResult> {
  return http.send('POST', `/api/sales/${saleId}/purchase`, { headers: { authorization: `Bearer ${token}` }, body: { quantity } });
}

// ---------------------------------------------------------------------------------------------------------
// The compose stack, through podman's Docker-compatible API.

/** The demo's crowd (scripts/demo.ts): 1000 units, at most 2 a buyer, 3000 buyers trying twice, 64 connections. */
const DEMO = { stock: 1000, perUserLimit: 2, buyers: 3000, attempts: 2, connections: 64 };

interface ComposeStack {
  compose(args: readonly string[], options?: { allowFailure?: boolean; echo?: boolean }): Promise<RunResult>;
  containers(service: string): Promise<string[]>;
  proxyUrl: string;
  redisUrl: string;
  databaseUrl: string;
}

async function startApiService(socketDir: string): Promise<{ socket: string; child: ChildProcess }> {
  const socket = join(socketDir, 'podman.sock');
  const child = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  await until(
    'podman system service answering /_ping',
    30_000,
    () =>
      new Promise<true | undefined>((resolve) => {
        const req = request({ socketPath: socket, path: '/_ping', timeout: 1000 }, (res) => {
          res.resume();
          resolve(res.statusCode === 200 ? true : undefined);
        });
        req.on('error', () => resolve(undefined));
        req.end();
      }),
  ).catch((error: unknown) => {
    console.log(stderr);
    throw error;
  });
  return { socket, child };
}

/**
 * podman runs a container's health check from a systemd timer; these machines have no systemd, so
 * nothing would ever run them and compose would wait forever on `condition: service_healthy`. This plays
 * the timer: every 2 s (the compose files' interval), `podman healthcheck run` on each of the project's
 * containers that has a health check, which runs the compose file's own test in the container and records
 * the result where compose reads it.
 */
function healthTicker(project: string): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const listed = await podmanList(['ps'], [`${COMPOSE_PROJECT}=${project}`], { format: '{{.Names}} {{.Status}}', allowFailure: true });
      for (const line of listed) {
        const [name, ...status] = line.split(' ');
        if (/\((healthy|unhealthy|starting)\)/.test(status.join(' ')))
          await podman(env, ['healthcheck', 'run', name!], { allowFailure: true });
      }
      await sleep(2000);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

async function checkCompose(): Promise<void> {
  const socketDir = mkdtempSync(join(tmpdir(), 'flashsale-image-check-'));
  const api = await startApiService(socketDir);
  const [redisPort, mariadbPort, proxyPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const composeEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DOCKER_HOST: `unix://${api.socket}`,
    COMPOSE_PROJECT_NAME: RUN,
    ...SECRETS,
    REDIS_HOST_PORT: String(redisPort),
    MARIADB_HOST_PORT: String(mariadbPort),
    PROXY_HOST_PORT: String(proxyPort),
    GATEWAYS: '2',
    WORKERS: '2',
  };
  delete composeEnv.REDIS_CLUSTER_NODES;
  // The one thing changed for this machine, in a file of the check's own: its open-file hard limit is
  // 20000 and cannot be raised, and HAProxy refuses to start when infra/haproxy.cfg's maxconn 20000
  // needs more descriptors than that (two a connection). The proxy gets that file with maxconn 9000.
  const haproxyCfg = readFileSync(join(ROOT, 'infra/haproxy.cfg'), 'utf8');
  must('infra/haproxy.cfg sets maxconn 20000 (the line the check lowers)', /^ {2}maxconn 20000$/m.test(haproxyCfg));
  writeFileSync(join(socketDir, 'haproxy.cfg'), haproxyCfg.replace(/^ {2}maxconn 20000$/m, '  maxconn 9000'));
  writeFileSync(
    join(socketDir, 'docker-compose.check.yml'),
    // JSON is YAML.
    JSON.stringify({ services: { proxy: { volumes: [`${join(socketDir, 'haproxy.cfg')}:/usr/local/etc/haproxy/haproxy.cfg:ro`] } } }),
  );
  const files = ['-f', 'infra/docker-compose.yml', '-f', 'infra/docker-compose.app.yml', '-f', join(socketDir, 'docker-compose.check.yml')];
  const stack: ComposeStack = {
    compose: (args, opts = {}) => run('docker-compose', [...files, ...args], { env: composeEnv, ...opts }),
    async containers(service) {
      return (
        await podmanList(['ps', '-a'], [`${COMPOSE_PROJECT}=${RUN}`, `com.docker.compose.service=${service}`], { format: '{{.Names}}' })
      ).sort();
    },
    proxyUrl: `http://127.0.0.1:${proxyPort}`,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    databaseUrl: `mysql://root@127.0.0.1:${mariadbPort}/flashsale`,
  };
  const ticker = healthTicker(RUN);
  try {
    step(`docker-compose ${files.join(' ')} up -d --no-build (project ${RUN}, through podman's API)`);
    const started = performance.now();
    const up = await stack.compose(['up', '-d', '--no-build'], { allowFailure: true });
    must(
      'compose brings the stack up (migrate completed, stores healthy)',
      up.code === 0,
      up.code === 0 ? secondsSince(started) : `${up.stderr.trim().split('\n').slice(-8).join('\n')}`,
    );
    console.log((await podmanList(['ps', '-a'], [`${COMPOSE_PROJECT}=${RUN}`], { format: '{{.Names}}\t{{.Status}}' })).join('\n'));
    const healthStarted = performance.now();
    const health = await until('every container with a health check healthy', 120_000, async () => {
      const listed = await podmanList(['ps'], [`${COMPOSE_PROJECT}=${RUN}`], { format: '{{.Names}} {{.Status}}' });
      const checked = listed.filter((line) => /\((healthy|unhealthy|starting)\)/.test(line));
      return checked.length > 0 && checked.every((line) => line.endsWith('(healthy)')) ? checked.length : undefined;
    });
    check(
      'every container with a health check healthy (its compose test run in it)',
      true,
      `${health} containers, ${secondsSince(healthStarted)}`,
    );
    const gateways = await stack.containers('gateway');
    const workers = await stack.containers('worker');
    check(
      'two gateway and two worker containers',
      gateways.length === 2 && workers.length === 2,
      `${gateways.join(', ')}; ${workers.join(', ')}`,
    );
    const migrateExit = (
      await podmanList(['ps', '-a'], [`${COMPOSE_PROJECT}=${RUN}`, 'com.docker.compose.service=migrate'], { format: '{{.Status}}' })
    ).join('\n');
    check('migrate ran once and exited 0', /^Exited \(0\)/.test(migrateExit), migrateExit);
    await until('HAProxy answering /healthz from a gateway', 90_000, async () =>
      (await httpStatus(`${stack.proxyUrl}/healthz`)) === 200 ? true : undefined,
    ).catch(async (error: unknown) => {
      for (const name of [...(await stack.containers('proxy')), ...gateways]) console.log(`-- ${name}\n${await logsOf(name)}`);
      throw error;
    });
    check('HAProxy at the published port reaches the gateways', true, stack.proxyUrl);

    const redis = createRedis(stack.redisUrl);
    // The compose file's roles run on the default prefix.
    const store = createSaleStore(redis, 'flashsale');
    const prisma = createPrisma(stack.databaseUrl, 2);
    try {
      await demoCrowd(stack, store, prisma);
      await faultsCrowd(stack, store, prisma, gateways, workers);
    } finally {
      redis.disconnect();
      await prisma.$disconnect();
    }
  } finally {
    await ticker.stop();
    step('docker-compose down -v');
    let down = await stack.compose(['down', '-v', '--remove-orphans', '-t', '30'], { allowFailure: true });
    // A container its restart policy was bringing back as compose removed the others holds the network: once more.
    if (down.code !== 0) down = await stack.compose(['down', '-v', '--remove-orphans', '-t', '30'], { allowFailure: true });
    check(
      'compose removes the stack (containers, network, volumes)',
      down.code === 0,
      down.code === 0 ? '' : down.stderr.trim().split('\n').slice(-3).join(' '),
    );
    api.child.kill('SIGTERM');
    rmSync(socketDir, { recursive: true, force: true });
  }
}

/** Purchases, each buyer's attempts in order, every answer kept (a request that got none is an error answer). */
/**
 * The buyers' purchases, each answered. A `429 RATE_LIMITED` is asked again after its `Retry-After`, as a
 * client is told to: through HAProxy every buyer of the check has this machine's address, so a crowd that
 * comes faster than the gateways' per-address budgets would otherwise get refusals a real crowd, from
 * addresses of its own, does not. The refused go again together, at the crowd's concurrency, each round.
 */
async function crowd(
  url: string,
  saleId: number,
  requests: { userId: string; token: string; quantity: number }[],
  connections: number,
  pace?: number,
) {
  let results = await crowdOnce(url, saleId, requests, connections, pace);
  for (let round = 0; round < 20; round += 1) {
    const limited = results.filter((r) => r.answer?.status === 429);
    if (limited.length === 0) break;
    await sleep(1000 * Math.max(...limited.map((r) => Number(r.answer!.headers['retry-after'] ?? 1))));
    const again = await crowdOnce(url, saleId, limited, connections);
    results = [...results.filter((r) => r.answer?.status !== 429), ...again];
  }
  return results;
}

async function crowdOnce(
  url: string,
  saleId: number,
  requests: { userId: string; token: string; quantity: number }[],
  connections: number,
  pace?: number,
) {
  const http = createHttpClient(url, connections);
  const started = performance.now();
  try {
    return await mapConcurrently(
      requests.map((r, index) => ({ ...r, index })),
      connections,
      async (r) => {
        if (pace !== undefined) await sleep(Math.max(0, started + (r.index * 1000) / pace - performance.now()));
        try {
          return { ...r, answer: await purchase(http, saleId, r.token, r.quantity) };
        } catch (error) {
          return { ...r, answer: undefined, error: (error as Error).message };
        }
      },
    );
  } finally {
    http.close();
  }
}

async function demoCrowd(stack: ComposeStack, store: SaleStore, prisma: PrismaClient): Promise<void> {
  step(`the demo's crowd through HAProxy: ${DEMO.stock} units, ${DEMO.buyers} buyers x ${DEMO.attempts}, ${DEMO.connections} connections`);
  const admin = createHttpClient(stack.proxyUrl, 2);
  const saleId = await createSale(admin, { stock: DEMO.stock, perUserLimit: DEMO.perUserLimit });
  admin.close();
  const buyers = Array.from({ length: DEMO.buyers }, (_, i) => `demo-buyer-${i}`);
  const tokens = signBuyerTokens(buyers, { secret: SECRETS.AUTH_SECRET });
  const requests = buyers.flatMap((userId, b) =>
    Array.from({ length: DEMO.attempts }, (_, a) => ({ userId, token: tokens[b]!, quantity: ((b + a) % 2) + 1 })),
  );
  const started = performance.now();
  const results = await crowd(stack.proxyUrl, saleId, requests, DEMO.connections);
  const seconds = (performance.now() - started) / 1000;
  const outcomes = tally(results);
  console.log(
    `${results.length} purchases in ${seconds.toFixed(1)} s (${Math.round(results.length / seconds)}/s): ${JSON.stringify(outcomes)}`,
  );
  const unanswered = results.filter((r) => r.answer === undefined || r.answer.status >= 500);
  check(
    'every purchase answered 202 or a 4xx refusal (no 5xx, no error)',
    unanswered.length === 0,
    unanswered
      .slice(0, 3)
      .map((r) => JSON.stringify(r.answer ?? r.error))
      .join(' '),
  );
  const accepted = acceptedOf(results);
  await store.sale(saleId).waitForDrain(120_000);
  const ledger = await ledgerOf(store, prisma, saleId, accepted);
  const units = [...accepted.values()].reduce((sum, a) => sum + a.quantity, 0);
  check(
    'the ledger: every 202 an order, no duplicate, units + remaining = stock, sold out',
    ledger.lost.length + ledger.duplicated.length + ledger.unexpected.length === 0 &&
      ledger.unitsInDb === units &&
      ledger.unitsInDb + ledger.remaining === ledger.stock &&
      ledger.remaining === 0,
    `${accepted.size} orders, ${ledger.unitsInDb} units in MariaDB + ${ledger.remaining} remaining = ${ledger.unitsInDb + ledger.remaining} / ${ledger.stock}; lost ${ledger.lost.length}, duplicated ${ledger.duplicated.length}, unexpected ${ledger.unexpected.length}`,
  );
}

/**
 * A second sale, its crowd paced so that it lasts through the faults: the gateway containers restarted
 * one after the other (each stopped with compose's grace period, started again, healthy before the next),
 * and a worker container SIGKILLed mid-burst (its restart policy brings it back; its unacknowledged
 * entries are claimed). Every 202 must be exactly one order; a request cut by the restart got no answer
 * and may have become an order or nothing, never two.
 */
async function faultsCrowd(
  stack: ComposeStack,
  store: SaleStore,
  prisma: PrismaClient,
  gateways: string[],
  workers: string[],
): Promise<void> {
  // Long enough (60 s) for two gateway restarts and a worker's SIGKILL on a slow, shared machine.
  const stock = 6000;
  const pace = 100;
  step(
    `faults: a sale of ${stock}, ${stock} buyers at ${pace}/s through HAProxy; rolling restart of ${gateways.join(', ')}; SIGKILL to ${workers[0]}`,
  );
  const admin = createHttpClient(stack.proxyUrl, 2);
  const saleId = await createSale(admin, { stock, perUserLimit: 1 });
  admin.close();
  const buyers = Array.from({ length: stock }, (_, i) => `fault-buyer-${i}`);
  const tokens = signBuyerTokens(buyers, { secret: SECRETS.AUTH_SECRET });
  let burstOver = false;
  const burst = crowd(
    stack.proxyUrl,
    saleId,
    buyers.map((userId, i) => ({ userId, token: tokens[i]!, quantity: 1 })),
    16,
    pace,
  ).finally(() => (burstOver = true));
  const servedBy = async (gateway: string): Promise<number | undefined> => {
    const served = await podman(env, ['exec', gateway, 'node', '-e', SERVED_PURCHASES], { allowFailure: true });
    const count = Number(served.stdout.trim());
    return served.code === 0 && served.stdout.trim() !== '' && Number.isFinite(count) ? count : undefined;
  };
  // What happened when, on the wall clock HAProxy's log uses: read beside it when a purchase went unanswered.
  const timeline: string[] = [];
  const mark = (event: string) => timeline.push(`${new Date().toISOString()} ${event}`);
  const faults = (async () => {
    await sleep(3000);
    for (const gateway of gateways) {
      // The others must be taking buyers through HAProxy before this one stops (their counters move), or
      // the crowd would meet no gateway at all while it restarts.
      for (const other of gateways.filter((name) => name !== gateway)) {
        const before = await servedBy(other);
        await until(`${other} taking purchases through HAProxy before ${gateway} stops`, 60_000, async () => {
          if (burstOver) return true;
          const now = await servedBy(other);
          return before !== undefined && now !== undefined && now > before ? true : undefined;
        });
      }
      const started = performance.now();
      mark(`${gateway} stopping (SIGTERM)`);
      await podman(env, ['stop', '-t', '30', gateway]);
      mark(`${gateway} stopped`);
      await podman(env, ['start', gateway]);
      await until(`${gateway} healthy again`, 60_000, async () => {
        const health = (await podman(env, ['healthcheck', 'run', gateway], { allowFailure: true })).code;
        return health === 0 ? true : undefined;
      }).catch(async (error: unknown) => {
        const health = await podman(env, ['healthcheck', 'run', gateway], { allowFailure: true });
        const state = await podman(env, ['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', gateway], { allowFailure: true });
        console.log(
          `-- ${gateway}: ${state.stdout.trim()}; healthcheck ${health.code} ${health.stdout}${health.stderr}\n${await logsOf(gateway)}`,
        );
        throw error;
      });
      // Healthy is not yet in service: HAProxy finds the new container's address by DNS and checks it
      // before sending it buyers. The next gateway stops only once this one answers purchases (its own
      // counter of them, read inside it), or the crowd would meet no gateway at all.
      mark(`${gateway} healthy`);
      await until(`${gateway} serving purchases through HAProxy again`, 60_000, async () => {
        if (burstOver) return true;
        return ((await servedBy(gateway)) ?? 0) > 0 ? true : undefined;
      });
      mark(`${gateway} serving purchases again`);
      console.log(`${gateway}: stopped (SIGTERM), started, healthy and serving purchases again in ${secondsSince(started)}`);
    }
    const worker = workers[0]!;
    await podman(env, ['kill', '--signal', 'KILL', worker]);
    console.log(`${worker}: SIGKILLed mid-burst`);
  })();
  const [results] = await Promise.all([burst, faults]);
  const outcomes = tally(results);
  console.log(`${results.length} purchases: ${JSON.stringify(outcomes)}`);
  const accepted = acceptedOf(results);
  const uncertain = new Set(results.filter((r) => r.answer === undefined || r.answer.status >= 500).map((r) => r.userId));
  const killed = workers[0]!;
  check(
    'every purchase answered during the rolling restart (202, or a 4xx refusal)',
    uncertain.size === 0,
    `${uncertain.size} without an answer`,
  );
  if (uncertain.size > 0) {
    const proxies = await stack.containers('proxy');
    const proxyLog = (await Promise.all(proxies.map(logsOf))).join('\n');
    console.log(`-- the restarts:\n${timeline.join('\n')}\n-- HAProxy's log (its server changes):\n${proxyLog}`);
  }
  // podman applies a restart policy from the exiting container's cleanup process, which does not bring
  // it back on these machines (seen with \`podman run --restart unless-stopped\` alone): the check plays it.
  const state = (await podman(env, ['inspect', '--format', '{{.State.Status}}', killed])).stdout.trim();
  if (state !== 'running') {
    console.log(`${killed}: ${state} after the SIGKILL (podman did not apply restart: unless-stopped here); started again by the check`);
    await podman(env, ['start', killed]);
  }
  await store.sale(saleId).waitForDrain(120_000);
  const ledger = await faultLedgerOf(store, prisma, saleId, accepted, uncertain);
  check(
    'the ledger after the faults: every 202 an order, no duplicate, nothing oversold, units + remaining = stock',
    ledger.lost.length + ledger.duplicated.length + ledger.unexpected.length + ledger.oversold === 0 &&
      ledger.unitsInDb + ledger.remaining === ledger.stock,
    `${accepted.size} accepted, ${ledger.unitsInDb} units in MariaDB + ${ledger.remaining} remaining = ${ledger.unitsInDb + ledger.remaining} / ${ledger.stock}; lost ${ledger.lost.length}, duplicated ${ledger.duplicated.length}, unexpected ${ledger.unexpected.length}; without an answer ${uncertain.size} (became orders ${ledger.unknownBecameOrders})`,
  );
}

/** Run inside a gateway container: how many purchases it has answered since it started (its /metrics). */
const SERVED_PURCHASES = `fetch('http://127.0.0.1:3003/metrics').then((r) => r.text()).then((t) => console.log(t.split('\\n').filter((l) => l.startsWith('flashsale_purchases_total{')).reduce((n, l) => n + Number(l.split(' ').pop()), 0)))`;

function tally(results: { answer?: HttpResult; error?: string }[]): Record<string, number> {
  const outcomes: Record<string, number> = {};
  for (const r of results) {
    const label =
      r.answer === undefined
        ? `no answer (${r.error})`
        : r.answer.status === 202
          ? '202'
          : `${r.answer.status} ${String(r.answer.body.code)}`;
    outcomes[label] = (outcomes[label] ?? 0) + 1;
  }
  return outcomes;
}

function acceptedOf(
  results: { userId: string; quantity: number; answer?: HttpResult }[],
): Map<string, { userId: string; quantity: number }> {
  const accepted = new Map<string, { userId: string; quantity: number }>();
  for (const r of results)
    if (r.answer?.status === 202) accepted.set(r.answer.body.reservationId as string, { userId: r.userId, quantity: r.quantity });
  return accepted;
}

// ---------------------------------------------------------------------------------------------------------

/**
 * What podman lists of `what` (`['ps', '-a']`, `['volume', 'ls']`, ...) carrying every label of `labels`
 * (`name=value`), a line each, in `format` (the ids by default). With `allowFailure`, a listing that
 * fails lists nothing.
 */
async function podmanList(
  what: string[],
  labels: string[],
  { format, allowFailure = false }: { format?: string; allowFailure?: boolean } = {},
): Promise<string[]> {
  const filters = labels.flatMap((label) => ['--filter', `label=${label}`]);
  const listed = await podman(env, [...what, ...filters, ...(format === undefined ? ['-q'] : ['--format', format])], { allowFailure });
  return listed.stdout.split('\n').filter(Boolean);
}

/** The ids podman lists of `what` labelled `label=<this run>` (none when the listing fails). */
const idsOfRun = (what: string[], label: string) => podmanList(what, [`${label}=${RUN}`], { allowFailure: true });

/** Whatever is left of this run: its containers (the roles', compose's), its compose networks and volumes. */
async function removeEverything(): Promise<void> {
  const ids = [...(await idsOfRun(['ps', '-a'], 'org.flashsale.check')), ...(await idsOfRun(['ps', '-a'], COMPOSE_PROJECT))];
  if (ids.length > 0) await podman(env, ['rm', '-f', '-t', '0', ...ids], { allowFailure: true });
  for (const kind of ['volume', 'network']) {
    const left = await idsOfRun([kind, 'ls'], COMPOSE_PROJECT);
    if (left.length > 0) await podman(env, [kind, 'rm', '-f', ...left], { allowFailure: true });
  }
  check(
    'nothing of this run left in podman',
    (await idsOfRun(['ps', '-a'], COMPOSE_PROJECT)).length === 0 && (await idsOfRun(['ps', '-a'], 'org.flashsale.check')).length === 0,
  );
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    console.error(`\n${signal}: removing what this run started`);
    void removeEverything().finally(() => process.exit(130));
  });
}

const began = performance.now();
try {
  IMAGE = await builtAppImage(env);
  if (options.only !== 'compose') await checkRoles();
  if (options.only !== 'roles') await checkCompose();
} catch (error) {
  // A check that aborted was recorded by must(); one that ran out of time (until) is recorded here.
  if (!failures.includes((error as Error).message)) failures.push((error as Error).message);
  if (error instanceof CheckAborted) console.log(`FAIL ${error.message}`);
  else console.error(error);
} finally {
  if (!interrupted) {
    step('cleanup');
    await removeEverything();
  }
}
console.log(`\nimage:check ${failures.length === 0 ? 'passed' : `FAILED (${failures.join('; ')})`} in ${secondsSince(began)}`);
process.exit(failures.length === 0 ? 0 : 1);
