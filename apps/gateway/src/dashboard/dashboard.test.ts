import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { buyerToken, launchChromium, purchaseBurst, signInToDashboard, startFaultProxy } from '@flashsale/harness';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer } from '../../../../test/support/http.ts';

// The dashboard in a real headless Chromium against a real gateway, Redis and MariaDB. One browser for
// the file; each test its own browser context (its own cookies).
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  // A database of the file's own: the overview lists the newest 20 sales of the database, and the suite's
  // other files would create sales in a shared one meanwhile.
  { isolated: true, env: { DASHBOARD_INTERVAL_MS: '150' } },
);

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function withPage(run: (page: Page, context: BrowserContext) => Promise<void>): Promise<void> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  try {
    await run(await context.newPage(), context);
  } finally {
    await context.close();
  }
}

const signIn = (page: Page, token = ctx.config.ADMIN_TOKEN) => signInToDashboard(page, gateway.url, token);

const purchase = (saleId: number, buyer: string) =>
  fetch(`${gateway.url}/api/sales/${saleId}/purchase`, { method: 'POST', headers: bearer(buyerToken(buyer)) });

describe('the dashboard', () => {
  it('shows a signed-out visitor only the sign-in, and refuses a wrong token', async () => {
    await withPage(async (page, context) => {
      await page.goto(`${gateway.url}/admin/`);
      await page.waitForSelector('#sign-in:not([hidden])');
      expect(await page.isHidden('#dashboard')).toBe(true);
      expect(await page.textContent('#sales tbody')).toBe('');
      expect((await page.request.get(`${gateway.url}/admin/live`)).status()).toBe(401);
      expect((await page.request.get(`${gateway.url}/api/admin/sales`)).status()).toBe(401);

      await signIn(page, 'not-the-admin-token-at-all');

      await expect.poll(() => page.textContent('#sign-in-error'), { timeout: 60_000 }).toBe('That admin token is not valid.');
      expect(await page.isHidden('#dashboard')).toBe(true);
      expect(await context.cookies()).toEqual([]);
    });
  });

  it("signs in once into an HttpOnly, SameSite=Strict session cookie: no token in the URL or the page's storage; sign-out ends the session on the server", async () => {
    await withPage(async (page, context) => {
      const before = Date.now() / 1000;
      await signIn(page);
      await page.waitForSelector('#dashboard:not([hidden])');

      const cookies = await context.cookies();
      expect(cookies).toEqual([
        expect.objectContaining({
          name: 'flashsale_admin',
          path: '/',
          httpOnly: true,
          sameSite: 'Strict',
          secure: false,
          domain: '127.0.0.1',
        }),
      ]);
      expect(cookies[0]!.expires).toBeGreaterThan(before + ctx.config.ADMIN_SESSION_TTL_SECONDS - 60);
      expect(cookies[0]!.expires).toBeLessThan(before + ctx.config.ADMIN_SESSION_TTL_SECONDS + 60);
      expect(page.url()).toBe(`${gateway.url}/admin/`);
      // Page expressions as strings: this project's TypeScript has no DOM types.
      const stored = await page.evaluate<{ html: string }>(
        '({ cookie: document.cookie, local: localStorage.length, session: sessionStorage.length, html: document.documentElement.outerHTML })',
      );
      expect(stored).toMatchObject({ cookie: '', local: 0, session: 0 });
      expect(stored.html).not.toContain(ctx.config.ADMIN_TOKEN);

      await page.click('#sign-out');
      await page.waitForSelector('#sign-in:not([hidden])');
      expect(await context.cookies()).toEqual([]);
      // The old cookie replayed from elsewhere: the session is gone from Redis, not only from the browser.
      const replayed = await fetch(`${gateway.url}/admin/session`, { headers: { cookie: `flashsale_admin=${cookies[0]!.value}` } });
      expect(replayed.status).toBe(401);
    });
  });

  it('watches remaining fall during a real burst, pauses and sees buyers refused, resumes', async () => {
    const sale = await createLiveSale(ctx, { stock: 300, name: 'Launch burst' });
    await withPage(async (page) => {
      await signIn(page);
      await page.waitForSelector('#dashboard:not([hidden])');
      await page.goto(`${gateway.url}/admin/#sale=${sale.id}`);
      await expect.poll(() => page.textContent('#remaining-text'), { timeout: 60_000 }).toBe('300 of 300 left');
      // The overview (the newest 20 sales of the file's own database) lists it.
      await expect.poll(() => page.textContent('#sales tbody'), { timeout: 60_000 }).toContain('Launch burst');
      // The sale's rebuy rule among its terms (the built-in one: 3 orders, 30 s).
      expect(await page.textContent('#sale-terms')).toContain('at most 3 orders per buyer, 30 s wait after a second cancel or expiry');

      const seen = new Set<string>();
      const watching = (async () => {
        for (let i = 0; i < 80 && !seen.has('60'); i++) {
          seen.add((await page.getAttribute('#remaining-text', 'data-remaining')) ?? '');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      // Four waves of 60 buyers, 400 ms apart: the page's view (every 150 ms) sees remaining fall by steps.
      for (let wave = 0; wave < 4; wave++) {
        const burst = await purchaseBurst(
          gateway.url,
          sale.id,
          Array.from({ length: 60 }, (_, i) => `dash-${sale.id}-${wave}-${i}`),
        );
        expect(burst.accepted.size).toBe(60);
        await page.waitForTimeout(400);
      }
      await watching;
      const values = [...seen].filter(Boolean).map(Number);
      expect(values).toContain(60);
      expect(values.filter((value) => value < 300 && value > 60).length).toBeGreaterThanOrEqual(2);

      await page.click('#pause');
      await expect.poll(() => page.textContent('#control-result'), { timeout: 60_000 }).toBe('pause: done (paused)');
      await expect.poll(() => page.textContent('#sale-status'), { timeout: 60_000 }).toBe('paused (operator)');
      const refused = await purchase(sale.id, `dash-${sale.id}-paused`);
      expect({ status: refused.status, code: ((await refused.json()) as { code: string }).code }).toEqual({
        status: 503,
        code: 'SALE_PAUSED',
      });

      await page.click('#resume');
      await expect.poll(() => page.textContent('#control-result'), { timeout: 60_000 }).toBe('resume: done (active)');
      expect((await purchase(sale.id, `dash-${sale.id}-resumed`)).status).toBe(202);
      await expect.poll(() => page.textContent('#remaining-text'), { timeout: 60_000 }).toBe('59 of 300 left');
    });
  });

  it('asks before closing a sale, and closes it only when confirmed', async () => {
    const sale = await createLiveSale(ctx, { stock: 5, name: 'Close me' });
    await withPage(async (page) => {
      await signIn(page);
      await page.waitForSelector('#dashboard:not([hidden])');
      await page.goto(`${gateway.url}/admin/#sale=${sale.id}`);
      await expect.poll(() => page.textContent('#sale-status'), { timeout: 60_000 }).toBe('active');

      page.once('dialog', (dialog) => void dialog.dismiss());
      await page.click('#close');
      await page.waitForTimeout(300);
      expect((await ctx.store.sale(sale.id).state())!.endsAt).toBe(sale.endsAt);

      page.once('dialog', (dialog) => void dialog.accept());
      await page.click('#close');
      await expect.poll(() => page.textContent('#control-result'), { timeout: 60_000 }).toBe('close: done (ended)');
      expect((await purchase(sale.id, `dash-${sale.id}-late`)).status).toBe(410);
    });
  });

  it("refuses a change a page of another origin makes the signed-in browser send (CSRF), and one without the session's token", async () => {
    const sale = await createLiveSale(ctx, { name: 'CSRF target' });
    // Another origin: same host, another port (same site, so SameSite alone lets the cookie through).
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<form id="f" method="POST" action="${gateway.url}/api/admin/sales/${sale.id}/pause"></form><script>document.getElementById('f').submit()</script>`,
      );
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      await withPage(async (page) => {
        await signIn(page);
        await page.waitForSelector('#dashboard:not([hidden])');

        const answer = page.waitForResponse((res) => res.url().endsWith(`/api/admin/sales/${sale.id}/pause`));
        await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
        const res = await answer;
        expect({ status: res.status(), code: ((await res.json()) as { code: string }).code }).toEqual({
          status: 403,
          code: 'CSRF_REJECTED',
        });

        await page.goto(`${gateway.url}/admin/`);
        const noToken = await page.evaluate(async (id) => {
          const r = await fetch(`/api/admin/sales/${id}/pause`, { method: 'POST', credentials: 'same-origin' });
          return { status: r.status, code: ((await r.json()) as { code: string }).code };
        }, sale.id);
        expect(noToken).toEqual({ status: 403, code: 'CSRF_REJECTED' });
        expect(await ctx.store.sale(sale.id).state()).toMatchObject({
          operatorPaused: false,
          controlsVersion: 0,
        });
      });
    } finally {
      await new Promise((resolve) => evil.close(resolve));
    }
  });

  it('renders a sale named like markup as text, running none of it (XSS)', async () => {
    const name = '<img src=x onerror="window.__xss=1">';
    const sale = await createLiveSale(ctx, { name });
    await withPage(async (page) => {
      await signIn(page);
      await page.waitForSelector('#dashboard:not([hidden])');
      await page.goto(`${gateway.url}/admin/#sale=${sale.id}`);
      await expect.poll(() => page.textContent('#sale-name'), { timeout: 60_000 }).toBe(`#${sale.id} ${name}`);
      await expect
        .poll(() => page.locator(`#sales tr[data-sale-id="${sale.id}"] td:nth-child(2)`).textContent(), { timeout: 60_000 })
        .toBe(name);

      expect(await page.evaluate("document.querySelectorAll('main img').length")).toBe(0);
      expect(await page.evaluate('window.__xss')).toBeUndefined();
    });
  });

  it('sends an operator whose session ended back to the sign-in, and lets nothing through', async () => {
    const sale = await createLiveSale(ctx, { name: 'Expiring session' });
    await withPage(async (page, context) => {
      await signIn(page);
      await page.waitForSelector('#dashboard:not([hidden])');
      await page.goto(`${gateway.url}/admin/#sale=${sale.id}`);
      await expect.poll(() => page.textContent('#sale-status'), { timeout: 60_000 }).toBe('active');
      // The session's time is up: its Redis key expires (ADMIN_SESSION_TTL_SECONDS; here at once).
      const value = (await context.cookies())[0]!.value;
      const { createHash } = await import('node:crypto');
      await ctx.redis.pexpire(`${ctx.config.REDIS_PREFIX}:admin-session:${createHash('sha256').update(value).digest('hex')}`, 1);

      await page.click('#pause');

      await page.waitForSelector('#sign-in:not([hidden])');
      expect(await page.textContent('#sign-in-error')).toBe('Your session has ended: sign in again.');
      expect(await ctx.store.sale(sale.id).state()).toMatchObject({ operatorPaused: false });
    });
  });

  it('reconnects a dropped live stream by itself, and shows what changed meanwhile', async () => {
    const sale = await createLiveSale(ctx, { stock: 10, name: 'Dropped stream' });
    // The browser reaches the gateway through a proxy that can cut every connection.
    const proxy = await startFaultProxy(Number(new URL(gateway.url).port));
    const viaProxy = `http://127.0.0.1:${proxy.port}`;
    try {
      await withPage(async (page) => {
        await signInToDashboard(page, viaProxy, ctx.config.ADMIN_TOKEN);
        await page.waitForSelector('#dashboard:not([hidden])');
        await page.goto(`${viaProxy}/admin/#sale=${sale.id}`);
        await expect.poll(() => page.textContent('#remaining-text'), { timeout: 60_000 }).toBe('10 of 10 left');

        proxy.cut();
        await expect.poll(() => page.textContent('#connection'), { timeout: 60_000 }).not.toMatch(/^live/);
        expect((await purchase(sale.id, `dash-${sale.id}-meanwhile`)).status).toBe(202);
        proxy.restore();

        await expect.poll(() => page.textContent('#remaining-text'), { timeout: 60_000 }).toBe('9 of 10 left');
        expect(await page.textContent('#connection')).toMatch(/^live/);
        expect(await page.isHidden('#sign-in')).toBe(true);
      });
    } finally {
      await proxy.close();
    }
  });
});
