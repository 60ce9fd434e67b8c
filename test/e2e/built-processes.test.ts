import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection } from 'mariadb';
import {
  buyerToken,
  createHttpClient,
  ledgerOf,
  mapConcurrently,
  spawnGateway,
  spawnReconciler,
  spawnWorker,
  type AppProcess,
  type HttpResult,
  testDatabaseName,
} from '@flashsale/harness';
import { poolConfigFromUrl } from '@flashsale/order-store';
import { migrationNames } from '@flashsale/order-store/testing';
import { createTestContext, type TestContext } from '../support/context.ts';

// The deployable build, started as the image starts it: `npm run build`, then `node scripts/start.mjs
// <role>` (the Dockerfile's ENTRYPOINT and CMD) for migrate, gateway, worker, reconciler and the runbook's
// reconcile, under NODE_ENV=production with the secrets production requires. No tsx, no source condition:
// the workspace packages resolve to their dist/, the Lua scripts, the Prisma client and the migrations
// are found from there.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const SECRETS = {
  AUTH_SECRET: randomBytes(24).toString('hex'),
  ADMIN_TOKEN: randomBytes(12).toString('hex'),
  PAYMENT_WEBHOOK_SECRET: randomBytes(24).toString('hex'),
};

let databaseUrl: string;
let ctx: TestContext | undefined;
const processes: AppProcess[] = [];

beforeAll(async () => {
  const started = performance.now();
  await run('npm', ['run', '--silent', 'build'], { cwd: ROOT });
  console.log(`npm run build: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const own = new URL(process.env.DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale_test');
  own.pathname = `/${testDatabaseName('built')}`;
  databaseUrl = own.toString();
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill('SIGKILL')));
  await ctx?.close();
  const { database, ...server } = poolConfigFromUrl(databaseUrl);
  const connection = await createConnection(server);
  await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
  await connection.end();
});

/** `node scripts/start.mjs <role> ...`, to its exit. */
function startRole(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, ['scripts/start.mjs', ...args], { cwd: ROOT, env: { ...process.env, ...env } });
}

describe('the built processes', () => {
  it('migrate, then gateway (two processes), worker and reconciler: purchases become orders, exactly', async () => {
    const migrated = await startRole({ NODE_ENV: 'production', ...SECRETS, DATABASE_URL: databaseUrl }, 'migrate');
    expect(migrated.stdout).toContain(`${migrationNames().length} applied, 0 already applied`);

    ctx = createTestContext({ DATABASE_URL: databaseUrl });
    const env = {
      NODE_ENV: 'production',
      ...SECRETS,
      REDIS_URL: ctx.config.REDIS_URL,
      REDIS_PREFIX: ctx.config.REDIS_PREFIX,
      DATABASE_URL: databaseUrl,
    };
    const track = <T extends AppProcess>(p: T) => (processes.push(p), p);
    const gateway = track(await spawnGateway({ ...env, GATEWAY_WORKERS: '2' }, 'build'));
    const worker = track(await spawnWorker(env, 'build'));
    const reconciler = track(await spawnReconciler(env, 'build'));
    // The gateway's cluster forks the built entry too (start.mjs hands it process.argv[1]).
    await gateway.waitForLog({
      matches: (l) => l.msg === 'gateway listening' && l.worker === 2,
      what: '"gateway listening" from cluster worker 2',
    });
    for (const [app, p] of [
      ['gateway', gateway],
      ['worker', worker],
      ['reconciler', reconciler],
    ] as const) {
      expect(p.child.spawnargs).toEqual([process.execPath, 'scripts/start.mjs', app]);
    }

    const http = createHttpClient(gateway.url, 8);
    const created = await http.send('POST', '/api/admin/sales', {
      headers: { authorization: `Bearer ${SECRETS.ADMIN_TOKEN}` },
      body: {
        name: 'Built',
        stock: 30,
        perUserLimit: 1,
        startsAt: new Date(Date.now() - 60_000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
    });
    expect(created.status).toBe(201);
    const saleId = created.body.id as number;

    const buyers = Array.from({ length: 40 }, (_, i) => `built-${i}`);
    const answers = new Map<string, HttpResult>();
    await mapConcurrently(buyers, 8, async (userId) => {
      const token = buyerToken(userId, { secret: SECRETS.AUTH_SECRET });
      answers.set(
        userId,
        await http.send('POST', `/api/sales/${saleId}/purchase`, { headers: { authorization: `Bearer ${token}` }, body: { quantity: 1 } }),
      );
    });
    const accepted = new Map<string, { userId: string; quantity: number }>();
    for (const [userId, answer] of answers)
      if (answer.status === 202) accepted.set(answer.body.reservationId as string, { userId, quantity: 1 });
    expect([...answers.values()].filter((a) => a.status !== 202).map((a) => a.body.code)).toEqual(Array(10).fill('SOLD_OUT'));

    await ctx.store.sale(saleId).waitForDrain();
    const ledger = await ledgerOf(ctx.store, ctx.prisma, saleId, accepted);
    expect(ledger).toEqual({ lost: [], duplicated: [], unexpected: [], unitsInDb: 30, remaining: 0, stock: 30 });
    const [reservationId, { userId }] = [...accepted][0]!;
    const lookup = await http.send('GET', `/api/reservations/${reservationId}`, {
      headers: { authorization: `Bearer ${buyerToken(userId, { secret: SECRETS.AUTH_SECRET })}` },
    });
    expect(lookup.body).toMatchObject({ reservationId, saleId, status: 'created', orderId: reservationId });
    http.close();

    // The runbook's command, from the same image: the built reconcile CLI with its arguments after the role.
    const reconciled = await startRole({ ...env, LOG_LEVEL: 'warn' }, 'reconcile', '--sale', String(saleId));
    expect(JSON.parse(reconciled.stdout)).toMatchObject({
      saleId,
      remaining: 0,
      buyers: 30,
      lost: { reservations: 0, units: 0 },
      judgement: 'intact',
    });

    expect(await Promise.all([gateway.kill('SIGTERM'), worker.kill('SIGTERM'), reconciler.kill('SIGTERM')])).toEqual([0, 0, 0]);
  });
});

describe('the built roles on the command line', () => {
  /** `node scripts/start.mjs <args>` to its exit, whatever the code. */
  async function startMjs(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await startRole({ NODE_ENV: 'production' }, ...args);
      return { code: 0, stdout, stderr };
    } catch (error) {
      const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
      return { code, stdout, stderr };
    }
  }

  it('in production without the secrets, every role refuses to start: one line naming each missing secret, exit 2, no stack trace', async () => {
    const roles = [['gateway'], ['worker'], ['reconciler'], ['migrate'], ['reconcile', '--sale', '1']];
    const noSecrets = { NODE_ENV: 'production', AUTH_SECRET: undefined, ADMIN_TOKEN: undefined, PAYMENT_WEBHOOK_SECRET: undefined };
    for (const role of roles) {
      let refused: { code: number; stdout: string; stderr: string };
      try {
        refused = { code: 0, ...(await startRole(noSecrets, ...role)) };
      } catch (error) {
        refused = error as { code: number; stdout: string; stderr: string };
      }
      expect({ role, code: refused.code, stderr: refused.stderr }).toEqual({
        role,
        code: 2,
        stderr:
          'Invalid configuration: AUTH_SECRET is required in production; ADMIN_TOKEN is required in production; PAYMENT_WEBHOOK_SECRET is required in production\n',
      });
    }
  });

  it('npm run start:<role> -- --help prints the role usage and exits 0; an unknown option: usage on stderr, exit 2, no stack trace (no secrets needed for either)', async () => {
    const roles = { gateway: 'gateway', worker: 'worker', reconciler: 'reconciler', migrate: 'db:migrate', reconcile: 'reconcile' };
    for (const [role, script] of Object.entries(roles)) {
      const help = await startMjs(role, '--help');
      expect({ role, code: help.code, stderr: help.stderr }).toEqual({ role, code: 0, stderr: '' });
      expect(help.stdout, role).toMatch(new RegExp(`^usage: npm run ${script}`));
      const wrong = await startMjs(role, '--bogus');
      expect({ role, code: wrong.code, stdout: wrong.stdout }).toEqual({ role, code: 2, stdout: '' });
      expect(wrong.stderr, role).toMatch(/^Unknown option '--bogus'\nusage: /);
      expect(wrong.stderr, role).not.toMatch(/^\s+at /m);
    }
  });
});
