import { describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { newReservationId } from '@flashsale/domain';
import { recordLostReservations } from '@flashsale/order-store/testing';
import { contextPerFile, createLiveSale } from '../../../test/support/context.ts';
import { runProcess } from '../../../test/support/run-process.ts';

// `npm run admin` as an operator runs it: a process of its own, configured by the environment, going
// through the module the admin API uses (runSaleControl), its audit line on stderr.
const env = contextPerFile();
const admin = (...args: string[]) =>
  runProcess(process.execPath, [...SOURCE_NODE_ARGS, 'apps/gateway/src/admin-cli.ts', ...args], {
    REDIS_PREFIX: env.ctx.config.REDIS_PREFIX,
    DATABASE_URL: env.ctx.config.DATABASE_URL,
    LOG_LEVEL: 'info',
  });

describe('npm run admin', () => {
  it('pauses, adds stock, resumes and closes a sale, printing it; each control audited in the log', async () => {
    const sale = await createLiveSale(env.ctx, { stock: 3, name: 'CLI sale' });
    const meta = () => env.ctx.redis.hgetall(saleKeys(env.ctx.config.REDIS_PREFIX, sale.id).meta);

    const paused = await admin('pause', '--sale', String(sale.id));
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.stdout)).toMatchObject({ id: sale.id, name: 'CLI sale', status: 'paused' });
    expect(JSON.parse(paused.stderr.trim().split('\n').at(-1)!)).toMatchObject({
      service: 'admin-cli',
      audit: 'sale_control',
      actor: 'cli',
      saleId: sale.id,
      action: 'pause',
      outcome: 'changed',
      redis: 'applied',
    });

    const stocked = await admin('stock', '--sale', String(sale.id), '--add', '4');
    expect({ code: stocked.code, sale: JSON.parse(stocked.stdout) }).toMatchObject({ code: 0, sale: { stock: 7, remaining: 7 } });
    expect((await admin('resume', '--sale', String(sale.id))).code).toBe(0);
    expect(await meta()).toMatchObject({ stock: '7', remaining: '7', op_paused: '0', ctl: '3' });

    const closed = await admin('close', '--sale', String(sale.id));
    expect(JSON.parse(closed.stdout)).toMatchObject({ status: 'ended' });
    const again = await admin('close', '--sale', String(sale.id));
    expect({ code: again.code, stdout: again.stdout }).toEqual({ code: 1, stdout: '' });
    expect(again.stderr).toContain('SALE_ALREADY_ENDED: the sale ended at');
  });

  it('lists the sales newest first', async () => {
    const older = await createLiveSale(env.ctx);
    const newer = await createLiveSale(env.ctx);

    const listed = await admin('list', '--limit', '100');

    expect(listed.code).toBe(0);
    const ids = (JSON.parse(listed.stdout) as { sales: { id: number }[] }).sales.map((sale) => sale.id);
    expect(ids.indexOf(newer.id)).toBeLessThan(ids.indexOf(older.id));
    expect(ids.indexOf(older.id)).toBeGreaterThanOrEqual(0);
  });

  it("lists a sale's losses: the counts and the named ones with their buyers, a page at a time", async () => {
    const sale = await createLiveSale(env.ctx);
    const named = [newReservationId(sale.id), newReservationId(sale.id)].sort();
    await recordLostReservations(
      env.ctx.prisma,
      named.map((reservationId, i) => ({
        reservationId,
        saleId: sale.id,
        userId: `lost-${i}`,
        quantity: 1,
        reason: 'OVER_STOCK',
        reservedAt: null,
      })),
    );
    await env.ctx.prisma.sale.update({ where: { id: sale.id }, data: { lostReservations: 3, lostUnits: 3 } });

    const first = await admin('losses', '--sale', String(sale.id), '--limit', '1');
    expect(first.code).toBe(0);
    const page = JSON.parse(first.stdout) as { nextCursor: string };
    expect(page).toMatchObject({
      saleId: sale.id,
      lost: { reservations: 3 },
      named: { reservations: 2 },
      unnamed: { reservations: 1 },
      reservations: [{ reservationId: named[0], userId: 'lost-0', reason: 'OVER_STOCK' }],
      nextCursor: named[0],
    });
    const second = await admin('losses', '--sale', String(sale.id), '--cursor', page.nextCursor);
    expect(JSON.parse(second.stdout)).toMatchObject({ reservations: [{ reservationId: named[1], userId: 'lost-1' }], nextCursor: null });

    const otherSale = await admin('losses', '--sale', String(sale.id), '--cursor', newReservationId(sale.id + 1));
    expect({ code: otherSale.code, usage: otherSale.stderr.includes('usage: npm run admin -- ') }).toEqual({ code: 2, usage: true });
    expect((await admin('losses', '--sale', String(sale.id), '--limit', '1001')).code).toBe(2);
    expect((await admin('losses')).code).toBe(2);
    expect((await admin('--help')).stdout).toContain('losses --sale <id>');
  });

  it('refuses a command line that is not valid with exit 2 and the usage, and an unknown sale with exit 1', async () => {
    const bad = await admin('stock', '--sale', '1', '--add', '0');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^--add must be a whole number from 1 to 1000000000, not 0\nusage: npm run admin -- /);
    expect((await admin('frobnicate')).code).toBe(2);
    const missing = await admin('pause', '--sale', '2000000000');
    expect({ code: missing.code, stderr: missing.stderr.split('\n').find((line) => line.startsWith('SALE_NOT_FOUND')) }).toEqual({
      code: 1,
      stderr: 'SALE_NOT_FOUND: no sale has the id 2000000000',
    });
  });
});
