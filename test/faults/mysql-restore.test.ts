import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, faultLedgerOf, purchaseBurst } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// MySQL goes back in time under a running sale: the sequence with the real tools. Orders are
// written, the database is dumped with mariadb-dump, more orders are written and acknowledged (and their
// stream entries trimmed), the dump is restored with the mariadb client, more buyers come. Every buyer
// told 202 must end with their order, under the id they were given; no unit sold twice; and the
// runbook's `npm run reconcile -- --sale` run by hand afterwards keeps the count.

const run = promisify(execFile);

let system: System | undefined;
let dir: string | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

/** The mariadb client tools' arguments for the database of `url`. */
function clientArgs(url: string): { args: string[]; database: string } {
  const parsed = new URL(url);
  return {
    args: ['-h', parsed.hostname, '-P', parsed.port || '3306', '-u', decodeURIComponent(parsed.username)],
    database: parsed.pathname.slice(1),
  };
}

function runbookReconcile(env: NodeJS.ProcessEnv, saleId: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'reconcile', '--', '--sale', String(saleId)], {
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('MySQL restored from a dump mid-sale', () => {
  it('writes again, under their own ids, the orders the restore took away; every 202 is an order; the runbook command keeps the count', async () => {
    // Retention 0: acknowledged entries go at the next checkpoint, so the lost orders' entries are gone
    // from the stream, as they were after 60 s in the probe.
    system = await startSystem({ workers: 2, env: { RECONCILER_STREAM_RETENTION_MS: '0', AUDIT_EVERY_MS: '500' } });
    const { ctx, gateways, env } = system;
    const prefix = ctx.config.REDIS_PREFIX;
    const saleId = await system.createSale({ stock: 1000 });
    const admin = createHttpClient(gateways[0]!.url, 1);
    const stats = async () =>
      (await admin.send('GET', `/api/admin/sales/${saleId}/stats`, { headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` } }))
        .body as { audit?: { drift: number }; consistent?: boolean; remaining?: number };
    const { args, database } = clientArgs(ctx.config.DATABASE_URL);
    dir = await mkdtemp(join(tmpdir(), 'flashsale-dump-'));
    const dumpFile = join(dir, 'dump.sql');

    const beforeDump = await purchaseBurst(gateways[0]!.url, saleId, buyers('before-dump', 150));
    await ctx.store.sale(saleId).waitForDrain();
    await until(
      () => ctx.prisma.order.count({ where: { saleId } }),
      (n) => n === 150,
    );
    const dump = await run('mariadb-dump', [...args, '--single-transaction', database], { maxBuffer: 64 * 1024 * 1024 });
    await writeFile(dumpFile, dump.stdout);

    const afterDump = await purchaseBurst(gateways[0]!.url, saleId, buyers('after-dump', 150));
    await ctx.store.sale(saleId).waitForDrain();
    // Written and acknowledged, and trimmed from the stream by retention.
    await until(
      () => ctx.prisma.order.count({ where: { saleId } }),
      (n) => n === 300,
    );
    await until(
      () => ctx.redis.xlen(saleKeys(prefix, saleId).stream),
      (n) => n <= 1,
      20_000,
    );

    // The restore: what the mariadb client does with the dump, while every process runs.
    const restore = spawn('mariadb', [...args, database], { stdio: ['pipe', 'ignore', 'pipe'] });
    let restoreErrors = '';
    restore.stderr.setEncoding('utf8').on('data', (chunk: string) => (restoreErrors += chunk));
    restore.stdin.end(await readFile(dumpFile));
    const restoreCode = await new Promise<number | null>((resolve) => restore.once('exit', resolve));
    expect({ restoreCode, restoreErrors }).toEqual({ restoreCode: 0, restoreErrors: '' });
    // The dump holds the first 150 orders and none of the next: the restore took those away (the
    // reconciler may already be writing them again by the time MySQL is counted, so the dump is).
    const dumped = await readFile(dumpFile, 'utf8');
    expect([...beforeDump.accepted.keys()].every((id) => dumped.includes(id))).toBe(true);
    expect([...afterDump.accepted.keys()].filter((id) => dumped.includes(id))).toEqual([]);

    // More buyers. The reconciliation the restore calls for may pause the sale under them for a moment
    // (503 SALE_PAUSED, Retry-After): those retry, as a buyer does, until every one is answered 202.
    const afterRestore = await purchaseBurst(gateways[0]!.url, saleId, buyers('after-restore', 100));
    for (let round = 0; afterRestore.accepted.size < 100 && round < 20; round++) {
      expect(Object.keys(afterRestore.refused).filter((code) => code !== 'SALE_PAUSED')).toEqual([]);
      await until(
        () => ctx.store.sale(saleId).state(),
        (state) => state?.paused === false,
      );
      const answered = new Set([...afterRestore.accepted.values()].map((a) => a.userId));
      const retry = await purchaseBurst(
        gateways[0]!.url,
        saleId,
        buyers('after-restore', 100).filter((b) => !answered.has(b)),
      );
      for (const [id, value] of retry.accepted) afterRestore.accepted.set(id, value);
      afterRestore.refused = retry.refused;
    }
    expect([beforeDump.accepted.size, afterDump.accepted.size, afterRestore.accepted.size]).toEqual([150, 150, 100]);

    // The audit sees -150, confirmed; the reconciliation it queues writes the 150 orders again.
    const accepted = new Map([...beforeDump.accepted, ...afterDump.accepted, ...afterRestore.accepted]);
    await until(
      () => ctx.prisma.order.count({ where: { saleId } }),
      (n) => n === 400,
      60_000,
    );
    await until(stats, (s) => s.audit?.drift === 0 && s.consistent === true && s.remaining === 600, 30_000);
    const restored = await ctx.prisma.order.findMany({ where: { reservationId: { in: [...afterDump.accepted.keys()] } } });
    expect(restored.map((o) => o.reservationId).sort()).toEqual([...afterDump.accepted.keys()].sort());
    expect(restored.every((o) => o.status === 'created' && o.payBy.getTime() - o.reservedAt.getTime() === 900_000)).toBe(true);

    // The runbook's command, by hand: it judges the sale intact and puts nothing back on sale.
    const byHand = await runbookReconcile(env, saleId);
    expect(byHand.code).toBe(0);
    expect(JSON.parse(byHand.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      saleId,
      remaining: 600,
      buyers: 400,
      lost: { reservations: 0, units: 0 },
      restored: { reservations: 0, units: 0 },
    });

    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, accepted, new Set());
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect(await stats()).toMatchObject({ remaining: 600, unitsInDb: 400, consistent: true, lost: { reservations: 0, units: 0 } });
    admin.close();
  });
});
