import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { buyerToken, launchChromium, signInToDashboard } from '@flashsale/harness';
import { createLiveSale, redisNow, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { createQueuedSale, doorBuyer } from '../../../../test/support/door.ts';
import { until } from '../../../../test/support/until.ts';
import { bearer } from '../../../../test/support/http.ts';

// A queued sale's door on the dashboard, in a real headless Chromium against a real
// gateway, Redis and MariaDB: the panel's figures as the door moves, its chart, and the operator's
// controls of admission reaching MySQL and Redis. A history point every 200 ms here (1 s by default).
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

async function openSale(page: Page, saleId: number): Promise<void> {
  await signInToDashboard(page, gateway.url, ctx.config.ADMIN_TOKEN);
  await page.waitForSelector('#dashboard:not([hidden])');
  await page.goto(`${gateway.url}/admin/#sale=${saleId}`);
}

/** The panel's raw values by field (data-value), as the page shows them now. */
async function panel(page: Page): Promise<Record<string, string>> {
  const cells = await page.locator('#door-figures dd').all();
  return Object.fromEntries(
    await Promise.all(cells.map(async (dd) => [await dd.getAttribute('data-field'), await dd.getAttribute('data-value')])),
  );
}

describe("the dashboard's waiting room", () => {
  it('shows waiting, admitted and unused, the frontier, the rate and the last in line as the door moves, charts them, and pauses, resumes and sets the rate', async () => {
    // The start 20 s off: the panel is first read before it (a browser's start and sign-in on a busy
    // machine took over 3 s, and the door had opened before the first look).
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, {
      stock: 2,
      admitPerSecond: 1,
      admissionTtlSeconds: 600,
      startsIn: 20_000,
    });
    const buyers = Array.from({ length: 6 }, (_, i) => doorBuyer(gateway.url, id, `panel-${id}-${i}`));
    for (const b of buyers) await b.join();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await openSale(page, id);
      await page.waitForSelector('#door-panel:not([hidden])');
      await expect
        .poll(() => panel(page), { timeout: 15_000 })
        .toMatchObject({ waiting: '6', unused: '0', front: '0', admitPerSecond: '1', open: 'false' });
      expect(await redisNow(ctx.redis)).toBeLessThan(startsAt);

      // After the start the buyers ask; the door admits two (the stock bound) and holds the rest.
      await until(
        () => redisNow(ctx.redis),
        (now) => now >= startsAt,
      );
      await until(
        async () => {
          for (const b of buyers) await b.status();
          return panel(page);
        },
        (shown) => shown.front === '2',
        60_000,
      );
      await expect
        .poll(() => panel(page), { timeout: 60_000 })
        .toMatchObject({ waiting: '4', unused: '2', front: '2', room: '0', open: 'true' });
      expect(await page.textContent('#door-figures dd[data-field="etaLastSeconds"]')).toBe('none while admitted buyers hold every unit');
      const chart = page.locator('#chart-door svg');
      await expect.poll(async () => Number((await chart.getAttribute('data-points')) ?? 0), { timeout: 60_000 }).toBeGreaterThanOrEqual(3);
      // The chart's newest point catches up with the panel at the history's next step (a point taken
      // between the two admissions shows 5 waiting).
      await expect
        .poll(() => page.locator('#chart-door svg path[data-series="waiting"]').getAttribute('data-last'), { timeout: 60_000 })
        .toBe('4');
      expect(await page.locator('#chart-door svg path[data-series="admittedUnused"]').getAttribute('data-max')).toBe('2');

      await page.click('#door-pause');
      await expect.poll(() => panel(page), { timeout: 60_000 }).toMatchObject({ open: 'false' });
      expect(await page.textContent('#door-figures dd[data-field="open"]')).toBe('paused by the operator');
      expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id } })).toMatchObject({ admissionPaused: true });
      expect(await page.isDisabled('#door-pause')).toBe(true);

      await page.click('#door-resume');
      await expect.poll(() => page.textContent('#control-result'), { timeout: 60_000 }).toBe('admission: done (1 admitted/s)');
      await page.fill('#door-rate', '5');
      await page.click('#door-set-rate');
      await expect.poll(() => panel(page), { timeout: 60_000 }).toMatchObject({ open: 'true', admitPerSecond: '5' });
      expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id } })).toMatchObject({ admissionPaused: false, admitPerSecond: 5 });
      expect(await page.textContent('#control-result')).toBe('admission: done (5 admitted/s)');

      // An open sale has no waiting room: no panel, no door chart.
      const open = await createLiveSale(ctx, { stock: 5, name: 'Open' });
      await page.goto(`${gateway.url}/admin/#sale=${open.id}`);
      await page.waitForSelector('#sale-charts svg[data-points]');
      await expect.poll(() => page.locator('#sale-name').textContent(), { timeout: 60_000 }).toContain('Open');
      expect(await page.isHidden('#door-panel')).toBe(true);
      expect(await page.locator('#chart-door').count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it("shows the turns not shown up yet, the no-show rate the door admits ahead of, and the shadow queue's joins", async () => {
    const { id, startsAt } = await createQueuedSale(ctx, gateway.url, {
      stock: 1,
      admitPerSecond: 5,
      admissionTtlSeconds: 600,
      showUpSeconds: 2,
      startsIn: 3000,
    });
    // Five accounts that never show up, and one the shop's identity system flags (QUEUE_FLAG_CLAIM).
    const buyers = Array.from({ length: 5 }, (_, i) => doorBuyer(gateway.url, id, `no-show-${id}-${i}`));
    for (const b of buyers) await b.join();
    const flagged = await fetch(`${gateway.url}/api/sales/${id}/queue`, {
      method: 'POST',
      headers: bearer(buyerToken(`flagged-${id}`, { claims: { flagged: true } })),
    });
    expect(flagged.status).toBe(200);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await openSale(page, id);
      await page.waitForSelector('#door-panel:not([hidden])');
      await expect.poll(() => panel(page), { timeout: 15_000 }).toMatchObject({ awaitingShowUp: '0', noShowRate: '0', shadowJoins: '1' });
      expect(await page.textContent('#door-figures dd[data-field="shadowJoins"]')).toBe('1');

      // After the start the door moves while someone asks (a poll is not showing up): the first turn's
      // window lapses unused, and the rate measured sends the door ahead of it.
      await until(
        () => redisNow(ctx.redis),
        (now) => now >= startsAt,
      );
      const shown = await until(
        async () => {
          await buyers[0]!.status();
          return panel(page);
        },
        (values) => Number(values.noShowRate) > 0 && Number(values.front) > 1,
        60_000,
      );
      expect(Number(shown.awaitingShowUp)).toBeLessThanOrEqual(Number(shown.unused));
      expect(await page.textContent('#door-figures dd[data-field="noShowRate"]')).toBe(`${Math.round(Number(shown.noShowRate) * 100)}%`);
    } finally {
      await context.close();
    }
  });
});
