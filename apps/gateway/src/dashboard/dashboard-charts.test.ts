import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, purchaseBurst, signInToDashboard } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer } from '../../../../test/support/http.ts';

// The dashboard's charts and ledger in a real headless Chromium against a real gateway, Redis and MariaDB.
// The history takes a point every 200 ms here (1 s by default), so a burst shows in seconds.
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  // A database of the file's own: the history follows the newest DASHBOARD_HISTORY_MAX_SALES live sales,
  // and in the shared one other files' newer sales push this file's out of it.
  {
    isolated: true,
    env: { DASHBOARD_INTERVAL_MS: '200', DASHBOARD_HISTORY_STEP_MS: '200', DASHBOARD_HISTORY_SECONDS: '120', LIVE_SALES_REFRESH_MS: '200' },
  },
);

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function withPage(run: (page: Page) => Promise<void>): Promise<void> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    await run(await context.newPage());
  } finally {
    await context.close();
  }
}

async function openSale(page: Page, saleId: number): Promise<void> {
  await signInToDashboard(page, gateway.url, ctx.config.ADMIN_TOKEN);
  await page.waitForSelector('#dashboard:not([hidden])');
  await page.goto(`${gateway.url}/admin/#sale=${saleId}`);
}

/** What a chart draws: its points, its axes' tick labels and unit, and each line's first, last and highest value. */
async function chart(page: Page, id: string) {
  const svg = page.locator(`#${id} svg`);
  const lines: Record<string, { first: number; last: number; max: number }> = {};
  for (const path of await svg.locator('path').all()) {
    const [series, first, last, max] = await Promise.all(
      ['data-series', 'data-first', 'data-last', 'data-max'].map((name) => path.getAttribute(name)),
    );
    lines[series!] = { first: Number(first), last: Number(last), max: Number(max) };
  }
  return {
    points: Number((await svg.getAttribute('data-points')) ?? 0),
    xTicks: await svg.locator('.x-tick').allTextContents(),
    yTicks: await svg.locator('.y-tick').allTextContents(),
    unit: await svg.locator('.unit').textContent(),
    lines,
  };
}

const buyers = (saleId: number, tag: string, count: number) => Array.from({ length: count }, (_, i) => `charts-${saleId}-${tag}-${i}`);

describe('the dashboard charts', () => {
  it('gain points during a real burst with plausible values: remaining falls, units accepted per second above zero, then sold-out refusals; every chart has its axes and unit', async () => {
    const sale = await createLiveSale(ctx, { stock: 200, name: 'Charted burst' });
    await withPage(async (page) => {
      await openSale(page, sale.id);
      await expect.poll(async () => (await chart(page, 'chart-remaining')).points, { timeout: 60_000 }).toBeGreaterThanOrEqual(3);

      for (const wave of ['a', 'b']) {
        expect((await purchaseBurst(gateway.url, sale.id, buyers(sale.id, wave, 100))).accepted.size).toBe(100);
        await page.waitForTimeout(700);
      }
      const refused = await purchaseBurst(gateway.url, sale.id, buyers(sale.id, 'late', 60));
      expect(refused.refused).toEqual({ SOLD_OUT: 60 });

      await expect.poll(async () => (await chart(page, 'chart-remaining')).lines.remaining?.last, { timeout: 60_000 }).toBe(0);
      await expect.poll(async () => (await chart(page, 'chart-refusals')).lines.SOLD_OUT?.max ?? 0, { timeout: 60_000 }).toBeGreaterThan(0);
      const remaining = await chart(page, 'chart-remaining');
      expect(remaining.lines.remaining).toMatchObject({ first: 200, max: 200, last: 0 });
      expect(remaining.lines.stock).toMatchObject({ first: 200, last: 200 });
      expect((await chart(page, 'chart-accepted')).lines.acceptedPerSecond!.max).toBeGreaterThan(0);
      expect((await chart(page, 'chart-latency')).lines.p99Ms!.max).toBeGreaterThan(0);
      expect(await page.textContent('#chart-refusals .legend')).toContain('sold out');
      // Without a worker here, every accepted entry stays in flight: 200 of them.
      expect((await chart(page, 'chart-backlog')).lines.inFlight!.last).toBe(200);

      const units: Record<string, string> = {
        'chart-remaining': 'units',
        'chart-accepted': 'units/s',
        'chart-backlog': 'entries',
        'chart-written': 'orders/s',
        'chart-refusals': 'refusals/s',
        'chart-latency': 'ms',
      };
      for (const [id, unit] of Object.entries(units)) {
        const drawn = await chart(page, id);
        expect({ id, unit: drawn.unit }).toEqual({ id, unit });
        expect(drawn.points).toBeGreaterThanOrEqual(3);
        expect(drawn.xTicks.length).toBeGreaterThanOrEqual(2);
        expect(drawn.xTicks.every((tick) => /^\d{2}:\d{2}(:\d{2})?$/.test(tick))).toBe(true);
        expect(drawn.yTicks.length).toBeGreaterThanOrEqual(2);
      }
    });
  });

  it('show the history since the sale began after a reload, and to a page opened mid-sale', async () => {
    const sale = await createLiveSale(ctx, { stock: 100, name: 'Reloaded' });
    // The gateway follows the sale from its live-sale directory's next read, whether or not a page watches.
    await expect.poll(() => gateway.gateway.history.salePoints(sale.id)?.t.length ?? 0, { timeout: 60_000 }).toBeGreaterThanOrEqual(2);
    expect((await purchaseBurst(gateway.url, sale.id, buyers(sale.id, 'early', 40))).accepted.size).toBe(40);
    await expect.poll(() => gateway.gateway.history.salePoints(sale.id)?.series.remaining?.at(-1), { timeout: 60_000 }).toBe(60);

    await withPage(async (page) => {
      // Opened after the burst: it draws what happened before it existed.
      await openSale(page, sale.id);
      await expect
        .poll(async () => (await chart(page, 'chart-remaining')).lines.remaining, { timeout: 60_000 })
        .toMatchObject({ first: 100, max: 100, last: 60 });
      const before = (await chart(page, 'chart-remaining')).points;

      expect((await purchaseBurst(gateway.url, sale.id, buyers(sale.id, 'mid', 20))).accepted.size).toBe(20);
      await page.reload();
      await page.waitForSelector('#sale-charts svg[data-points]');
      const after = await chart(page, 'chart-remaining');
      expect(after.points).toBeGreaterThanOrEqual(before);
      expect(after.lines.remaining!.first).toBe(100);
      await expect.poll(async () => (await chart(page, 'chart-remaining')).lines.remaining?.last, { timeout: 60_000 }).toBe(40);
      expect(await page.textContent('#history-note')).toMatch(
        /^Charts since \d{2}:\d{2}:\d{2}, last point \d{2}:\d{2}:\d{2} \(a point every 0\.2 s, kept 2 min/,
      );
    });
  });
});

describe('the dashboard ledger', () => {
  it('matches GET /api/admin/sales/:id/stats cell by cell, in words, and turns its verdict red when Redis and MySQL disagree', async () => {
    const sale = await createLiveSale(ctx, { stock: 30, name: 'Ledger' });
    expect((await purchaseBurst(gateway.url, sale.id, buyers(sale.id, 'ledger', 12))).accepted.size).toBe(12);
    const stats = async () =>
      (await (
        await fetch(`${gateway.url}/api/admin/sales/${sale.id}/stats`, { headers: bearer(ctx.config.ADMIN_TOKEN) })
      ).json()) as Record<string, unknown>;
    const member = (value: unknown, path: string) =>
      path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | null)?.[key], value);

    await withPage(async (page) => {
      await openSale(page, sale.id);
      await page.waitForSelector('#ledger td[data-field="inFlight"][data-value="12"]');
      const expected = await stats();
      const cells = await page.locator('#ledger td[data-field]').all();
      const shown = Object.fromEntries(
        await Promise.all(
          cells.map(async (cell) => [await cell.getAttribute('data-field'), await cell.getAttribute('data-value')] as const),
        ),
      );
      expect(Object.keys(shown).length).toBe(22);
      for (const [field, value] of Object.entries(shown)) {
        const inStats = member(expected, field);
        expect({ field, value }).toEqual({
          field,
          value: inStats === null || inStats === undefined ? '' : String(inStats as string | number),
        });
      }

      const ledger = await page.textContent('#ledger');
      expect(ledger).toContain('Awaiting payment');
      expect(ledger).toContain('Refunds due');
      expect(ledger).toContain('not audited yet');
      expect(ledger).not.toMatch(/ordersByStatus|amountCents|_/);
      expect(await page.getAttribute('#verdict', 'data-balanced')).toBe('true');
      expect(await page.textContent('#verdict')).toBe('Ledger balanced so far: nothing oversold, 12 entries in flight.');

      // Redis says 13 more units are left than it should: 31 of a stock of 30, whatever is in flight.
      await ctx.redis.hincrby(saleKeys(ctx.config.REDIS_PREFIX, sale.id).meta, 'remaining', 13);
      await expect.poll(() => page.getAttribute('#verdict', 'data-balanced'), { timeout: 60_000 }).toBe('false');
      expect(await page.textContent('#verdict')).toBe(
        'Ledger does not balance: remaining 31 + live orders 0 + on their way back 0 = 31 units, stock 30 (12 in flight).',
      );
      expect(await page.getAttribute('#verdict', 'class')).toBe('verdict bad');
    });
  });

  it('reads every panel from one snapshot per refresh: the header, the list and the ledger show one remaining; the verdict says "judging" rather than nothing; no x-axis label runs past its chart', async () => {
    const sale = await createLiveSale(ctx, { stock: 400, name: 'One snapshot' });
    await withPage(async (page) => {
      await openSale(page, sale.id);
      await page.waitForSelector('#ledger td[data-field="remaining"][data-value="400"]');
      // Read in one evaluation, between two pushes or right after one: never two figures side by side.
      const panels = () =>
        page.evaluate<{ header: string | null; list: string | null; ledger: string | null; verdict: string; at: string }>(`(() => ({
          header: document.getElementById('remaining-text').dataset.remaining ?? null,
          list: document.querySelector('#sales tr[data-sale-id="${sale.id}"] td:nth-child(4)')?.textContent.split(' / ')[0] ?? null,
          ledger: document.querySelector('#ledger td[data-field="remaining"]')?.dataset.value ?? null,
          verdict: document.getElementById('verdict').textContent,
          at: document.getElementById('figures-at')?.textContent ?? '',
        }))()`);
      const seen: Awaited<ReturnType<typeof panels>>[] = [];
      const watching = (async () => {
        for (let i = 0; i < 120; i++) {
          seen.push(await panels());
          await page.waitForTimeout(25);
        }
      })();
      // Waves of buyers while the page refreshes every 200 ms, without a worker: entries stay in flight.
      for (let wave = 0; wave < 5; wave++) {
        expect((await purchaseBurst(gateway.url, sale.id, buyers(sale.id, `snap-${wave}`, 60))).accepted.size).toBe(60);
        await page.waitForTimeout(300);
      }
      await watching;
      const moments = seen.filter((s) => s.list !== null);
      expect(moments.length).toBeGreaterThan(60);
      for (const moment of moments)
        expect({ header: moment.header, list: moment.list }).toEqual({ header: moment.ledger, list: moment.ledger });
      expect(new Set(moments.map((m) => m.ledger)).size).toBeGreaterThanOrEqual(3);
      for (const moment of moments) {
        expect(moment.verdict).toMatch(
          /^(Ledger balanced so far: nothing oversold, [\d,]+ entries in flight\.|Ledger balanced: .*|judging: [\d,]+ in flight)$/,
        );
        expect(moment.at).toMatch(/^Figures as of \d{2}:\d{2}:\d{2}, one read for the header, the list and the ledger\.$/);
      }
      expect(await page.textContent('#history-note')).toMatch(/, last point \d{2}:\d{2}:\d{2} \(/);

      // Every x-axis label inside its chart's drawing, the last one too.
      for (const id of ['chart-remaining', 'chart-accepted', 'chart-backlog']) {
        const outside = await page.evaluate<string[]>(
          `[...document.querySelectorAll('#${id} svg .x-tick')].filter((t) => { const b = t.getBBox(); return b.x < 0 || b.x + b.width > 460.5; }).map((t) => t.textContent)`,
        );
        expect({ id, outside }).toEqual({ id, outside: [] });
      }
    });
  });
});
