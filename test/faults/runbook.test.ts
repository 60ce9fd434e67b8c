import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, faultLedgerOf, purchaseBurst, spawnInGroup, spawnReconciler } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// The runbook "Redis was lost mid-sale" (docs/runbooks/redis-lost.md), followed step by step as an on-call engineer would,
// with the reconciler down when Redis lost its data.

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

/**
 * `npm run reconcile -- --sale <id>`, exactly as the runbook says, with the deployment's environment.
 * A command still running after `giveUpMs` is killed: its code is then null (a command that hangs).
 */
function runbookReconcile(env: NodeJS.ProcessEnv, saleId: number, giveUpMs = 120_000) {
  return runNpm(env, ['reconcile', '--', '--sale', String(saleId)], giveUpMs);
}

/** `npm run <args>`, its output collected; SIGKILLed after `giveUpMs` (code null). */
function runNpm(
  env: NodeJS.ProcessEnv,
  args: string[],
  giveUpMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawnInGroup('npm', ['run', '--silent', ...args], {
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const giveUp = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), giveUpMs);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('exit', (code) => {
      clearTimeout(giveUp);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('runbook: Redis was lost mid-sale while no reconciler ran', () => {
  it('the runbook command counts the loss against the last checkpoint; the reconciler started afterwards counts nothing twice', async () => {
    system = await startSystem({ workerDbProxy: true });
    const { ctx, gateways, dbProxy, env } = system;
    const saleId = await system.createSale({ stock: 1000 });
    const admin = createHttpClient(gateways[0]!.url, 1);
    const stats = async () =>
      (await admin.send('GET', `/api/admin/sales/${saleId}/stats`, { headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` } }))
        .body;

    // 200 reservations become orders; 300 more are accepted while the workers cannot reach MySQL.
    const written = await purchaseBurst(gateways[0]!.url, saleId, buyers('written', 200));
    await ctx.store.sale(saleId).waitForDrain();
    dbProxy!.cut();
    const inRedisOnly = await purchaseBurst(gateways[0]!.url, saleId, buyers('in-redis', 300));
    expect([written.accepted.size, inRedisOnly.accepted.size]).toEqual([200, 300]);
    await until(
      () => ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } }),
      (s) => s.checkpointReservations === 500,
    );

    // The reconciler goes down; then Redis loses everything.
    await system.reconciler!.kill('SIGKILL');
    await ctx.redis.flushall();

    // Runbook, "what an operator sees": the stats show no Redis state (remaining null, not consistent).
    expect(await stats()).toMatchObject({ remaining: null, consistent: false, unitsInDb: 200, lost: { reservations: 0, units: 0 } });
    // "If no reconciler runs: npm run reconcile -- --sale <id> for each live sale."
    const run = await runbookReconcile(env, saleId);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      saleId,
      remaining: 800,
      buyers: 200,
      lost: { reservations: 300, units: 300 },
      judgement: 'lost',
    });

    // MySQL comes back for the workers; the batch they held of the lost state is refused, not written.
    dbProxy!.restore();
    await ctx.store.sale(saleId).waitForDrain(60_000);
    // A reconciler started again finds the rebuilt state healthy and counts nothing a second time.
    const restarted = await spawnReconciler(env);
    await until(
      () => ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } }),
      (s) => s.checkpointReservations === 200,
    );
    await restarted.kill();

    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, new Map([...written.accepted, ...inRedisOnly.accepted]), new Set());
    expect(ledger.lost.sort()).toEqual([...inRedisOnly.accepted.keys()].sort());
    const after = await stats();
    // The counted loss equals the real one.
    expect(after).toMatchObject({
      remaining: 800,
      inFlight: 0,
      unitsInDb: 200,
      consistent: true,
      lost: { reservations: ledger.lost.length, units: 300 },
    });
    expect({ duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    admin.close();
  });

  it("with Redis frozen, then dead, the runbook command says the queue did not answer and exits 1 by itself (the operator's pause names Redis too); with Redis back it rebuilds the sale", async () => {
    system = await startSystem({ reconciler: false, workers: 1 });
    const { ctx, gateways, env, redisServer } = system;
    const saleId = await system.createSale({ stock: 100 });
    const bought = await purchaseBurst(gateways[0]!.url, saleId, buyers('before', 10));
    await ctx.store.sale(saleId).waitForDrain();
    // The command's Redis deadline (REDIS_BACKGROUND_COMMAND_TIMEOUT_MS, 30 s by default) made short.
    const commandEnv = { ...env, REDIS_BACKGROUND_COMMAND_TIMEOUT_MS: '2000' };

    // Frozen: connected, never answering. BullMQ's connection waits for an answer for as long as it takes.
    redisServer.freeze();
    const frozen = await runbookReconcile(commandEnv, saleId, 60_000);
    expect(frozen.code).toBe(1);
    expect(frozen.stderr).toContain('reconcile failed: the reconcile queue (Redis) did not answer within 2000 ms');
    expect(frozen.stdout).toBe('');
    // The operator's pause, from a shell, against the same frozen Redis: says which store did not answer.
    const pause = await runNpm(commandEnv, ['admin', '--', 'pause', '--sale', String(saleId)], 60_000);
    expect({ code: pause.code, stdout: pause.stdout }).toEqual({ code: 1, stdout: '' });
    expect(pause.stderr).toContain('SERVICE_UNAVAILABLE: Redis did not answer (Command timed out)');
    redisServer.thaw();

    // Dead: connections refused. BullMQ's connection queues the commands until Redis is back.
    await redisServer.kill('SIGKILL');
    const dead = await runbookReconcile(commandEnv, saleId, 60_000);
    expect(dead.code).toBe(1);
    expect(dead.stderr).toContain('reconcile failed: the reconcile queue (Redis) did not answer within 2000 ms');

    // Back, empty (the test's Redis keeps nothing on disk): the same command rebuilds the sale from MySQL.
    await redisServer.start();
    const back = await runbookReconcile(commandEnv, saleId);
    expect(back.code).toBe(0);
    expect(JSON.parse(back.stdout.trim().split('\n').at(-1)!)).toMatchObject({ saleId, remaining: 90, buyers: bought.accepted.size });
  });
});
