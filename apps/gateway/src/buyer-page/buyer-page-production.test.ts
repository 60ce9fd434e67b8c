import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer } from '../../../../test/support/http.ts';

// The buyer's page of a gateway in production: it never mints a token or takes a payment itself; it
// sends the buyer to the shop's sign-in and checkout as configured.
const AUTH_SECRET = randomBytes(32).toString('hex');
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  {
    env: {
      NODE_ENV: 'production',
      AUTH_SECRET,
      ADMIN_TOKEN: randomBytes(32).toString('hex'),
      PAYMENT_WEBHOOK_SECRET: randomBytes(32).toString('hex'),
      BUYER_PAGE_PAYMENT_URL: 'https://shop.example/checkout?reservation={reservationId}&a="<b>',
      BUYER_PAGE_SIGN_IN_URL: 'https://shop.example/login?next={return}',
    },
  },
);

describe('the buyer page in production', () => {
  it("has no development sign-in and no demo payment (404), and names the shop's sign-in and checkout, escaped", async () => {
    const sale = await createLiveSale(ctx);
    const signIn = await fetch(`${gateway.url}/s/dev-sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"buyer":"mallory"}',
    });
    expect(signIn.status).toBe(404);
    const pay = await fetch(`${gateway.url}/s/${sale.id}/demo-payment`, {
      method: 'POST',
      headers: { ...bearer(buyerToken('buyer', { secret: AUTH_SECRET })), 'content-type': 'application/json' },
      body: JSON.stringify({ reservationId: `${sale.id}-x` }),
    });
    expect(pay.status).toBe(404);

    const html = await (await fetch(`${gateway.url}/s/${sale.id}`)).text();
    const body = /<body[^>]*>/.exec(html)![0];
    expect(body).toBe(
      '<body data-payment-url="https://shop.example/checkout?reservation={reservationId}&amp;a=&quot;&lt;b&gt;" data-sign-in-url="https://shop.example/login?next={return}">',
    );
  });
});
