import { createHash, createHmac, randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { solveChallenge } from 'altcha-lib/v1';
import { get } from 'node:http';
import { createRequire } from 'node:module';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { buyerToken, launchChromium, paymentEventRequest } from '@flashsale/harness';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer } from '../../../../test/support/http.ts';
import { writeOrdersOf } from '../../../../test/support/orders.ts';
import { createQueuedSale, doorBuyer } from '../../../../test/support/door.ts';

// The buyer's page in a real headless Chromium against a real gateway, Redis and MariaDB; the orders
// written as a worker writes them (writeOrdersOf, on a timer). One browser for the file; each test its
// own browser context (its own storage).
let ctx: TestContext;
let gateway: TestGateway;
/**
 * How often a test's own buyer asks to join a room that is not open yet: under the door's per-account
 * join budget (QUEUE_JOINS_PER_SECOND, 2), as the page itself keeps (a second between tries). Faster, the
 * account is set aside after three refused joins and answered from the shadow queue, as a bot is.
 */
const JOIN_POLL_MS = 600;

gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** The page's own weight, every file it loads, brotli-compressed as sent (the budget docs/operations.md states). */
const WEIGHT_BUDGET_BYTES = 12 * 1024;

async function withPage(
  run: (page: Page, context: BrowserContext) => Promise<void>,
  viewport = { width: 1024, height: 800 },
): Promise<void> {
  const context = await browser.newContext({ viewport });
  try {
    await run(await context.newPage(), context);
  } finally {
    await context.close();
  }
}

/** The orders of a sale written as a worker writes them, every 200 ms, until the returned stop. */
function writeOrdersEvery(saleId: number): () => void {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await writeOrdersOf(ctx, saleId);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return () => {
    stopped = true;
    void loop;
  };
}

const stateOf = (page: Page) => page.getAttribute('#state', 'data-state');
const untilState = (page: Page, state: string, timeout = 60_000) => expect.poll(() => stateOf(page), { timeout }).toBe(state);

/** No accessibility violation in the page as it stands (axe-core, injected through the DevTools protocol: the page's CSP allows no inline script). */
async function expectAccessible(page: Page, state: string): Promise<void> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE);
  const violations = await page.evaluate<{ id: string; nodes: { target: string[] }[] }[]>(
    'axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => ({ target: n.target })) })))',
  );
  expect(violations, `axe in state ${state}`).toEqual([]);
}

/** The page's width fits the viewport: nothing to scroll sideways. */
const sidewaysScroll = (page: Page) => page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');

/** A GET's status, headers and body as sent (fetch would decompress it). */
function rawGet(
  url: string,
  acceptEncoding: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

/** Joins the line of a sale that asks for a proof of work, solving it as any ALTCHA client does (altcha-lib's solver). */
async function joinSolved(saleId: number, userId: string): Promise<number> {
  const headers = bearer(buyerToken(userId));
  const asked = await fetch(`${gateway.url}/api/sales/${saleId}/queue/challenge`, { headers });
  expect(asked.status).toBe(200);
  const challenge = (await asked.json()) as { algorithm: string; challenge: string; salt: string; signature: string; maxnumber: number };
  const found = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
  const solution = Buffer.from(
    JSON.stringify({
      algorithm: challenge.algorithm,
      challenge: challenge.challenge,
      number: found!.number,
      salt: challenge.salt,
      signature: challenge.signature,
    }),
  ).toString('base64');
  const joined = await fetch(`${gateway.url}/api/sales/${saleId}/queue`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ solution }),
  });
  return joined.status;
}

/** The buyer's token handed over as a shop hands it: in the fragment of the page's address. */
const pageOf = (saleId: number, buyer: string) => `${gateway.url}/s/${saleId}#token=${buyerToken(buyer)}`;

describe('GET /s/:saleId', () => {
  it('answers an HTML page with a strict Content-Security-Policy, compressed, and 404 as a page for an unknown or malformed id', async () => {
    const sale = await createLiveSale(ctx, { name: 'Headers sale' });
    const res = await fetch(`${gateway.url}/s/${sale.id}`, { headers: { 'accept-encoding': 'br' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; worker-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(await res.text()).toContain('<h1 id="sale-name">');

    for (const path of ['/s/999999999', '/s/abc', '/s/0', '/s/1e3']) {
      const missing = await fetch(`${gateway.url}${path}`);
      expect(missing.status, path).toBe(404);
      expect(missing.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(missing.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await missing.text()).toContain('No such sale');
    }
  });

  it(`serves its files immutably under hashed names, brotli or gzip, and weighs under ${WEIGHT_BUDGET_BYTES} bytes in all`, async () => {
    const sale = await createLiveSale(ctx);
    const html = await (await fetch(`${gateway.url}/s/${sale.id}`)).text();
    const links = [...html.matchAll(/(?:href|src)="(\/s\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(links.map((link) => link.replace(/\.[0-9a-f]{12}\./, '.<hash>.'))).toEqual([
      '/s/assets/page.<hash>.css',
      '/s/assets/page.<hash>.js',
    ]);
    const pageJs = await (await fetch(`${gateway.url}${links[1]}`)).text();
    const imported = [...pageJs.matchAll(/'\.\/([a-z-]+\.[0-9a-f]{12}\.js)'/g)].map((m) => `/s/assets/${m[1]}`);
    expect(imported).toHaveLength(2);

    let weight = 0;
    for (const path of [`/s/${sale.id}`, ...links, ...imported]) {
      const [br, gzip, plain] = await Promise.all(
        ['br, gzip', 'gzip', 'identity'].map((coding) => rawGet(`${gateway.url}${path}`, coding)),
      );
      expect(
        [br!.status, br!.headers['content-encoding'], gzip!.headers['content-encoding'], plain!.headers['content-encoding']],
        path,
      ).toEqual([200, 'br', 'gzip', undefined]);
      expect(br!.headers.vary).toBe('Accept-Encoding');
      if (path.startsWith('/s/assets/')) expect(br!.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(brotliDecompressSync(br!.body)).toEqual(plain!.body);
      expect(gunzipSync(gzip!.body)).toEqual(plain!.body);
      weight += br!.body.length;
    }
    expect(weight).toBeLessThan(WEIGHT_BUDGET_BYTES);
    expect((await fetch(`${gateway.url}/s/assets/page.000000000000.js`)).status).toBe(404);
  });
});

describe('the buyer page', () => {
  it('an open sale by keyboard only on a 360 px screen: the development sign-in, buy, pay, the receipt; accessible in every state', async () => {
    const sale = await createLiveSale(ctx, { stock: 5, perUserLimit: 2, name: 'Open <b>sale</b>' });
    const stop = writeOrdersEvery(sale.id);
    try {
      await withPage(
        async (page) => {
          await page.goto(`${gateway.url}/s/${sale.id}`);
          await untilState(page, 'sign_in');
          expect(await page.textContent('#sale-name')).toBe('Open <b>sale</b>');
          await expectAccessible(page, 'sign_in');
          await page.keyboard.press('Tab');
          expect(await page.evaluate('document.activeElement.id')).toBe('buyer');
          await page.keyboard.type('keyboard-buyer');
          await page.keyboard.press('Enter');

          await untilState(page, 'open');
          expect(await page.textContent('#stock')).toBe('5 of 5 left');
          expect(await sidewaysScroll(page)).toBe(0);
          await expectAccessible(page, 'open');
          // Tab to the units, choose 2 with the arrow key, Tab to the button, Enter.
          await page.keyboard.press('Tab');
          expect(await page.evaluate('document.activeElement.id')).toBe('quantity');
          await page.keyboard.press('ArrowDown');
          await page.keyboard.press('Tab');
          expect(await page.evaluate('document.activeElement.id')).toBe('buy');
          await page.keyboard.press('Enter');

          await untilState(page, 'payment');
          expect(await page.textContent('#state-text')).toMatch(/: 2 units\. Pay before /);
          expect(await page.textContent('#countdown')).toMatch(/^Time left to pay: \d+ min \d+ s$/);
          expect(await sidewaysScroll(page)).toBe(0);
          await expectAccessible(page, 'payment');
          // The state's heading has the focus; the pay button is the next stop.
          expect(await page.evaluate('document.activeElement.id')).toBe('state-title');
          await page.keyboard.press('Tab');
          expect(await page.evaluate('document.activeElement.id')).toBe('pay');
          await page.keyboard.press('Enter');

          await untilState(page, 'receipt');
          const orders = await ctx.prisma.order.findMany({ where: { saleId: sale.id } });
          expect(orders).toEqual([expect.objectContaining({ userId: 'keyboard-buyer', quantity: 2, status: 'paid' })]);
          expect(await page.textContent('#receipt-order')).toBe(orders[0]!.reservationId);
          expect(await page.textContent('#announce')).toContain('Thank you: your order is paid');
          expect(await sidewaysScroll(page)).toBe(0);
          await expectAccessible(page, 'receipt');
        },
        { width: 360, height: 740 },
      );
    } finally {
      stop();
    }
  });

  it('a 503 during the purchase is retried by itself and ends in one order: the retry learns the reservation the first attempt made', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    const stop = writeOrdersEvery(sale.id);
    try {
      await withPage(async (page) => {
        const purchases: number[] = [];
        // The first purchase reaches the gateway and is taken; its answer is lost on the way back (a
        // proxy's 503): the buyer's reservation exists, the page does not know it.
        await page.route('**/api/sales/*/purchase', async (route) => {
          const real = await route.fetch();
          purchases.push(real.status());
          if (purchases.length === 1) {
            await route.fulfill({
              status: 503,
              headers: { 'content-type': 'application/problem+json', 'retry-after': '2' },
              body: JSON.stringify({
                code: 'SERVICE_UNAVAILABLE',
                status: 503,
                title: 'A backing service is unavailable',
                type: 'about:blank',
                detail: 'x',
              }),
            });
          } else await route.fulfill({ response: real });
        });
        await page.goto(pageOf(sale.id, 'busy-buyer'));
        // The token is out of the address at once.
        await expect.poll(() => page.url()).toBe(`${gateway.url}/s/${sale.id}`);
        await untilState(page, 'open');
        await page.click('#buy');
        await untilState(page, 'busy');
        expect(await page.textContent('#countdown')).toMatch(/^Trying again in [12] s$/);
        await expectAccessible(page, 'busy');
        await untilState(page, 'payment');
        expect(purchases).toEqual([202, 409]);
        await page.click('#pay');
        await untilState(page, 'receipt');
      });
      const orders = await ctx.prisma.order.findMany({ where: { saleId: sale.id } });
      expect(orders.map(({ userId, status }) => ({ userId, status }))).toEqual([{ userId: 'busy-buyer', status: 'paid' }]);
    } finally {
      stop();
    }
  });

  it("a queued sale: the waiting room's countdown, the join with the door's proof of work solved in the page, the place falling with polls no sooner than Retry-After, the turn, buy, pay, receipt", async () => {
    // The room opens at the start (no pre-queue) and asks every joiner for a proof of work; six buyers
    // join before the page (its join is held on the way until they have, as by a slow network), so the
    // page's buyer is seventh, in arrival order.
    let saleId = 0;
    let stop = () => {};
    try {
      await withPage(async (page) => {
        // The browser ready first: the room opens 8 s after the sale is made, the page is open before.
        await page.goto('about:blank');
        const sale = await createQueuedSale(ctx, gateway.url, {
          stock: 10,
          startsIn: 8000,
          preQueueSeconds: 0,
          admitPerSecond: 1,
          admissionTtlSeconds: 120,
          challenge: 'pow',
          challengeMaxNumber: 20_000,
        });
        saleId = sale.id;
        stop = writeOrdersEvery(sale.id);
        let othersJoined = () => {};
        const joinReleased = new Promise<void>((resolve) => (othersJoined = resolve));
        let challengesFetched = 0;
        let solutionSent: unknown;
        page.on('request', (request) => {
          if (request.url().endsWith('/queue/challenge')) challengesFetched += 1;
        });
        // Each poll as the browser timed it: when it left, and when its answer's headers came back.
        const polls: { sentAt: number; answeredAt: number; retryAfter: number; position: number | null }[] = [];
        let joins = 0;
        const recording: Promise<void>[] = [];
        page.on('requestfinished', (request: Request) => {
          if (!/\/api\/sales\/\d+\/queue$/.test(request.url())) return;
          if (request.method() === 'POST') return void (joins += 1);
          recording.push(
            (async () => {
              const response = (await request.response())!;
              const { startTime, responseStart } = request.timing();
              const body = (await response.json()) as { position: number | null };
              polls.push({
                sentAt: startTime,
                answeredAt: startTime + responseStart,
                retryAfter: Number(response.headers()['retry-after']),
                position: body.position,
              });
            })(),
          );
        });
        // The page's one join held on the way until the others have joined; then nothing is intercepted
        // (the polls' timings are the browser's own).
        await page.route('**/api/sales/*/queue', async (route) => {
          if (route.request().method() === 'POST') {
            solutionSent = (JSON.parse(route.request().postData() ?? '{}') as { solution?: unknown }).solution;
            await joinReleased;
          }
          await route.continue();
          await page.unroute('**/api/sales/*/queue');
        });
        await page.goto(pageOf(sale.id, `page-${sale.id}`));
        await untilState(page, 'scheduled');
        expect(await page.textContent('#state-title')).toBe('The waiting room opens soon');
        // 8 s at most, counted on the server's clock as the page knows it: from the Date header, whole
        // seconds, so up to a second off, and the countdown rounds up (seen: 9 s).
        expect(await page.textContent('#countdown')).toMatch(/^Opens in [1-9] s$/);
        await expectAccessible(page, 'scheduled');
        // The room opens: the page fetches its challenge and solves it in its worker, a progress bar showing.
        await untilState(page, 'checking', 30_000);
        expect(await page.textContent('#state-title')).toBe('Checking your browser…');
        expect(await page.isVisible('#progress-bar')).toBe(true);
        await expectAccessible(page, 'checking');
        // Meanwhile the others join, each with a solution of its own.
        for (let i = 0; i < 6; i++) expect(await joinSolved(sale.id, `ahead-${sale.id}-${i}`)).toBe(200);
        othersJoined();

        await untilState(page, 'waiting');
        // One challenge fetched, and the join carried its solution (the door took it: the page waits in line).
        expect(challengesFetched).toBe(1);
        expect(solutionSent).toMatch(/^[A-Za-z0-9+/]+=*$/);
        await expect.poll(() => page.textContent('#position'), { timeout: 30_000 }).toMatch(/^[1-7]$/);
        await expectAccessible(page, 'waiting');
        expect(await page.getAttribute('#progress-bar', 'value')).toMatch(/^\d+$/);
        expect(await page.textContent('#announce')).toMatch(/^Your place: \d\. \d ahead of you\./);

        await untilState(page, 'turn', 60_000);
        expect(await page.textContent('#countdown')).toMatch(/^Your turn ends in \d+ (min \d+ )?s$/);
        expect(await page.evaluate('document.activeElement.id')).toBe('buy');
        await expectAccessible(page, 'turn');
        // The place fell poll by poll, and no poll left sooner than the answer before it allowed.
        await Promise.all(recording);
        polls.sort((a, b) => a.sentAt - b.sentAt);
        const positions = polls.map((p) => p.position).filter((p): p is number => p !== null);
        expect(positions.length).toBeGreaterThanOrEqual(2);
        expect(positions[0]).toBeGreaterThan(positions.at(-1)!);
        for (let i = 1; i < polls.length; i++) {
          expect(polls[i - 1]!.answeredAt).toBeGreaterThan(polls[i - 1]!.sentAt);
          expect(polls[i]!.sentAt - polls[i - 1]!.answeredAt).toBeGreaterThanOrEqual(polls[i - 1]!.retryAfter * 1000);
        }
        expect(joins).toBe(1);

        await page.click('#buy');
        await untilState(page, 'payment');
        await page.click('#pay');
        await untilState(page, 'receipt');
        await expectAccessible(page, 'receipt');
        // The receipt stays: the journey is over, the door is not asked again.
        const asked = recording.length;
        await page.waitForTimeout(1500);
        expect(await stateOf(page)).toBe('receipt');
        expect(recording.length).toBe(asked);
      });
      const orders = await ctx.prisma.order.findMany({ where: { saleId } });
      expect(orders.map(({ userId, status }) => ({ userId, status }))).toEqual([{ userId: `page-${saleId}`, status: 'paid' }]);
    } finally {
      stop();
    }
  });

  it('a reload mid-queue keeps the place, and a second tab of the same buyer does not join again', async () => {
    const sale = await createQueuedSale(ctx, gateway.url, { stock: 10, startsIn: 1000, preQueueSeconds: 0, admitPerSecond: 0.05 });
    const others = Array.from({ length: 4 }, (_, i) => doorBuyer(gateway.url, sale.id, `before-${sale.id}-${i}`));
    await expect.poll(async () => (await others[0]!.join()).status, { timeout: 30_000, interval: JOIN_POLL_MS }).toBe(200);
    for (const other of others.slice(1)) expect((await other.join()).status).toBe(200);
    await withPage(async (page, context) => {
      let joins = 0;
      context.on('request', (request) => {
        if (request.method() === 'POST' && /\/api\/sales\/\d+\/queue$/.test(request.url())) joins += 1;
      });
      await page.goto(pageOf(sale.id, `reload-${sale.id}`));
      await expect.poll(() => page.textContent('#position'), { timeout: 30_000 }).toMatch(/^\d$/);
      const place = Number(await page.textContent('#position'));
      expect(place).toBeGreaterThanOrEqual(4);
      const ticket = await page.evaluate<string | null>(`localStorage.getItem('flashsale.sale.${sale.id}.reload-${sale.id}.ticket')`);
      expect(ticket).toMatch(/\./);

      await page.reload();
      await expect.poll(() => page.textContent('#position'), { timeout: 30_000 }).toMatch(/^\d$/);
      expect(Number(await page.textContent('#position'))).toBeLessThanOrEqual(place);
      const second = await context.newPage();
      await second.goto(`${gateway.url}/s/${sale.id}`);
      await expect.poll(() => second.textContent('#position'), { timeout: 30_000 }).toMatch(/^\d$/);
      expect(Number(await second.textContent('#position'))).toBeLessThanOrEqual(place);
      expect(joins).toBe(1);
    });
  });

  it('two tabs of one buyer opened together hold one place (the join runs under a Web Lock; the second tab finds the ticket)', async () => {
    const sale = await createQueuedSale(ctx, gateway.url, { stock: 10, startsIn: 60_000 });
    await withPage(async (page, context) => {
      // Every join sent, with its answer: a join the gateway refused or could not answer (429, 503) and
      // the page sent again is one join; two answered 200 would be two places asked for.
      const joins: number[] = [];
      let challenges = 0;
      context.on('requestfinished', (request) => {
        if (request.method() === 'POST' && /\/api\/sales\/\d+\/queue$/.test(request.url()))
          void request.response().then((answer) => joins.push(answer?.status() ?? 0));
      });
      context.on('request', (request) => {
        if (request.url().endsWith('/queue/challenge')) challenges += 1;
      });
      // Every join held 1.5 s on the way (a slow network): the second tab opens while the first's is in flight.
      await context.route('**/api/sales/*/queue', async (route) => {
        if (route.request().method() === 'POST') await new Promise((resolve) => setTimeout(resolve, 1500));
        await route.continue();
      });
      // The first tab hands the token over; the second, opened a moment later, finds it kept.
      await page.goto(pageOf(sale.id, `tabs-${sale.id}`));
      const second = await context.newPage();
      await second.goto(`${gateway.url}/s/${sale.id}`);
      await untilState(page, 'waiting');
      await untilState(second, 'waiting');
      // One join answered 200 across both tabs (a join sent again after a 429 or 503 is the same join):
      // the second tab, given the lock, reads the ticket from IndexedDB, which the first wrote before
      // letting the lock go (localStorage alone reached the second tab late under load: two joins).
      expect(
        joins.filter((status) => status === 200),
        `joins answered ${joins.join(', ')}`,
      ).toEqual([200]);
      // Before the draw a place has no number yet: both tabs wait on the one ticket the buyer holds.
      const ticket = await page.evaluate<string | null>(`localStorage.getItem('flashsale.sale.${sale.id}.tabs-${sale.id}.ticket')`);
      expect(ticket).toMatch(/\./);
      expect(await second.evaluate<string | null>(`localStorage.getItem('flashsale.sale.${sale.id}.tabs-${sale.id}.ticket')`)).toBe(ticket);
      // The sale asks for no proof of work: none fetched.
      expect(challenges).toBe(0);
    });
  });

  it('tells a buyer waiting in line that the sale sold out, and that a closed sale has ended', async () => {
    const sale = await createQueuedSale(ctx, gateway.url, {
      stock: 1,
      startsIn: 1000,
      preQueueSeconds: 0,
      admitPerSecond: 5,
      noShowFactor: 1,
    });
    const first = doorBuyer(gateway.url, sale.id, `first-${sale.id}`);
    await expect.poll(async () => (await first.join()).status, { timeout: 30_000, interval: JOIN_POLL_MS }).toBe(200);
    await withPage(async (page) => {
      await page.goto(pageOf(sale.id, `late-${sale.id}`));
      await untilState(page, 'waiting');
      // The first in line buys the one unit and pays: nothing can come back.
      await expect.poll(async () => (await first.status()).body.state, { timeout: 30_000 }).toBe('admitted');
      const bought = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
        method: 'POST',
        headers: bearer(buyerToken(`first-${sale.id}`)),
      });
      expect(bought.status).toBe(202);
      const { reservationId } = (await bought.json()) as { reservationId: string };
      await expect.poll(() => writeOrdersOf(ctx, sale.id)).toBe(1);
      const payment = paymentEventRequest(ctx.config.PAYMENT_WEBHOOK_SECRET, {
        id: `evt-${reservationId}`,
        reservationId,
        amountCents: 100,
      });
      const paid = await fetch(`${gateway.url}/api/payments/events`, {
        method: 'POST',
        headers: { ...payment.headers, 'content-type': 'application/json' },
        body: JSON.stringify(payment.body),
      });
      expect(paid.status).toBe(200);

      await untilState(page, 'sold_out', 90_000);
      expect(await page.textContent('#state-text')).toBe('Every unit has been sold. Thank you for waiting.');
      expect(await page.textContent('#announce')).toContain('Sold out');
      await expectAccessible(page, 'sold_out');
    });

    const open = await createLiveSale(ctx, { stock: 3 });
    const closed = await fetch(`${gateway.url}/api/admin/sales/${open.id}/close`, {
      method: 'POST',
      headers: bearer(ctx.config.ADMIN_TOKEN),
    });
    expect(closed.status).toBe(200);
    await withPage(async (page) => {
      await page.goto(pageOf(open.id, 'too-late'));
      await untilState(page, 'ended');
      await expectAccessible(page, 'ended');
    });
  });

  it('says the network is gone, keeps the place, and carries on when it is back', async () => {
    // One unit, held by the buyer ahead (admitted, not buying; noShowFactor 1): the page's buyer stays
    // first in line, told to ask again every 5 s.
    const sale = await createQueuedSale(ctx, gateway.url, {
      stock: 1,
      startsIn: 1000,
      preQueueSeconds: 0,
      admitPerSecond: 5,
      noShowFactor: 1,
    });
    const ahead = doorBuyer(gateway.url, sale.id, `ahead-${sale.id}`);
    await expect.poll(async () => (await ahead.join()).status, { timeout: 30_000, interval: JOIN_POLL_MS }).toBe(200);
    await withPage(async (page, context) => {
      await page.goto(pageOf(sale.id, `offline-${sale.id}`));
      await expect.poll(() => page.textContent('#position'), { timeout: 30_000 }).toBe('1');
      await context.setOffline(true);
      await expect.poll(() => page.isVisible('#offline'), { timeout: 60_000 }).toBe(true);
      await expectAccessible(page, 'offline');
      let answered = 0;
      page.on('response', (response) => {
        if (response.status() === 200 && /\/api\/sales\/\d+\/queue$/.test(response.url())) answered += 1;
      });
      await context.setOffline(false);
      // The next poll, when its Retry-After has passed, reaches the door with the ticket: the same place.
      await expect.poll(() => answered, { timeout: 60_000 }).toBeGreaterThan(0);
      await expect.poll(() => page.isHidden('#offline'), { timeout: 60_000 }).toBe(true);
      expect(await page.textContent('#position')).toBe('1');
      expect(await stateOf(page)).toBe('waiting');
    });
  });

  it("solves the door's proof of work in ALTCHA's format in the page's Web Worker, reporting progress, into the payload the door takes", async () => {
    const sale = await createLiveSale(ctx);
    // A challenge as ALTCHA's server makes one: SHA-256 of salt + a secret number, the challenge signed.
    const maxnumber = 50_000;
    const number = randomInt(20_000, maxnumber);
    const salt = `${randomBytes(12).toString('hex')}?expires=${Math.floor(Date.now() / 1000) + 300}`;
    const challengeHash = createHash('sha256').update(`${salt}${number}`).digest('hex');
    const challenge = {
      algorithm: 'SHA-256',
      challenge: challengeHash,
      salt,
      signature: createHmac('sha256', 'test-key').update(challengeHash).digest('hex'),
      maxnumber,
    };
    await withPage(async (page) => {
      await page.goto(`${gateway.url}/s/${sale.id}`);
      await untilState(page, 'sign_in');
      const html = await (await fetch(`${gateway.url}/s/${sale.id}`)).text();
      const pageJs = await (await fetch(`${gateway.url}${/src="(\/s\/assets\/page\.[0-9a-f]{12}\.js)"/.exec(html)![1]}`)).text();
      const workerUrl = `/s/assets/${/'\.\/(pow-worker\.[0-9a-f]{12}\.js)'/.exec(pageJs)![1]}`;
      const apiUrl = `/s/assets/${/'\.\/(buyer-api\.[0-9a-f]{12}\.js)'/.exec(pageJs)![1]}`;
      const solved = await page.evaluate<{ progress: number[]; number: number; payload: string }>(`new Promise((resolve, reject) => {
        const worker = new Worker(${JSON.stringify(workerUrl)});
        const progress = [];
        worker.onmessage = async ({ data }) => {
          if (data.progress !== undefined) return void progress.push(data.progress);
          if (data.error) return reject(new Error(data.error));
          const { altchaPayload } = await import(${JSON.stringify(apiUrl)});
          resolve({ progress, number: data.number, payload: altchaPayload(${JSON.stringify(challenge)}, data.number) });
        };
        worker.postMessage(${JSON.stringify(challenge)});
      })`);
      expect(solved.number).toBe(number);
      // A report every 4,096 numbers tried, in batches of 256, until the batch holding the answer.
      expect(solved.progress.length).toBe(Math.ceil((Math.floor(number / 256) * 256) / 4096));
      expect(solved.progress.every((p, i) => p >= 0 && p < 1 && (i === 0 || p > solved.progress[i - 1]!))).toBe(true);
      expect(JSON.parse(Buffer.from(solved.payload, 'base64').toString('utf8'))).toEqual({
        algorithm: 'SHA-256',
        challenge: challengeHash,
        number,
        salt,
        signature: challenge.signature,
      });
    });
  });
});
