import { setTimeout as sleep } from 'node:timers/promises';
import { createHttpClient, launchChromium, signBuyerTokens } from '@flashsale/harness';
import { redisNow, type ScriptedRedis } from '@flashsale/redis-store';

/**
 * `npm run demo -- --queue --screenshot <f>`: the buyer's page (GET /s/:saleId) in headless Chromium,
 * on a queued sale of its own: six buyers join as the room opens at the start, the page's buyer right
 * after them (seventh, in arrival order), the door admits one every two seconds. Saved: the page
 * mid-queue to `f`, and at the receipt, once the page has bought and paid (the demo's payment
 * provider), to `f` with `-receipt` before its extension.
 */
export interface BuyerPageShots {
  gatewayUrl: string;
  redis: ScriptedRedis;
  adminToken: string;
  authSecret: string;
  path: string;
  say(line: string): void;
}

const AHEAD = 6;

export async function screenshotBuyerPage({ gatewayUrl, redis, adminToken, authSecret, path, say }: BuyerPageShots): Promise<string[]> {
  const http = createHttpClient(gatewayUrl, 4);
  const startsAt = (await redisNow(redis)) + 3000;
  const created = await http.send('POST', '/api/admin/sales', {
    headers: { authorization: `Bearer ${adminToken}` },
    body: {
      name: 'Sneaker drop',
      stock: 20,
      perUserLimit: 2,
      startsAt: new Date(startsAt).toISOString(),
      endsAt: new Date(startsAt + 3_600_000).toISOString(),
      paymentWindowSeconds: 600,
      admission: { mode: 'queue', preQueueSeconds: 0, admitPerSecond: 0.5, admissionTtlSeconds: 120 },
    },
  });
  if (created.status !== 201) throw new Error(`creating the page's sale failed: ${created.status} ${JSON.stringify(created.body)}`);
  const saleId = created.body.id as number;
  say(`the buyer's page: ${gatewayUrl}/s/${saleId}`);
  const [pageToken, ...aheadTokens] = signBuyerTokens(['page-buyer', ...Array.from({ length: AHEAD }, (_, i) => `page-ahead-${i + 1}`)], {
    secret: authSecret,
  });
  while ((await redisNow(redis)) < startsAt) await sleep(100);
  for (const token of aheadTokens) {
    const joined = await http.send('POST', `/api/sales/${saleId}/queue`, { headers: { authorization: `Bearer ${token}` } });
    if (joined.status !== 200) throw new Error(`a buyer ahead could not join: ${joined.status} ${JSON.stringify(joined.body)}`);
  }
  http.close();

  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 390, height: 720 }, deviceScaleFactor: 2 });
    // The token as a shop hands it over: in the address's fragment, which the page takes out at once.
    await page.goto(`${gatewayUrl}/s/${saleId}#token=${pageToken}`);
    await page.waitForSelector('#position:not(:empty)', { timeout: 60_000 });
    // Once the place has fallen a few times, so the bar has moved. Read from here: the page's
    // Content-Security-Policy refuses script evaluated from a string.
    const deadline = performance.now() + 60_000;
    while (Number(await page.textContent('#position')) > 3) {
      if (performance.now() > deadline) throw new Error('the place did not fall to 3 within 60 s');
      await sleep(100);
    }
    await page.screenshot({ path });
    await page.waitForSelector('#state[data-state="turn"]', { timeout: 120_000 });
    await page.click('#buy');
    await page.waitForSelector('#state[data-state="payment"]', { timeout: 60_000 });
    await page.click('#pay');
    await page.waitForSelector('#state[data-state="receipt"]', { timeout: 60_000 });
    const receipt = path.replace(/(\.[a-z]+)?$/i, (extension) => `-receipt${extension}`);
    await page.screenshot({ path: receipt });
    return [path, receipt];
  } finally {
    await browser.close();
  }
}
