import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';

// Input the admin API refuses rather than take in another meaning than the one sent: a body it would
// ignore, a number spelt in hex, a sale name MySQL would store differently or a screen would show reordered.
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const admin = () => bearer(ctx.config.ADMIN_TOKEN);
const createSale = (name: string) =>
  fetch(`${gateway.url}/api/admin/sales`, {
    method: 'POST',
    headers: { ...admin(), 'content-type': 'application/json' },
    body: JSON.stringify({ name, stock: 5, startsAt: '2030-01-01T00:00:00.000Z', endsAt: '2030-01-02T00:00:00.000Z' }),
  });

describe('a bodiless admin control or cancel', () => {
  it.each(['pause', 'resume', 'close', 'reconcile'])('refuses %s with a text/plain body, 415, and changes nothing', async (action) => {
    const sale = await createLiveSale(ctx);
    const before = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } });

    await expectProblem(
      await fetch(`${gateway.url}/api/admin/sales/${sale.id}/${action}`, {
        method: 'POST',
        headers: { ...admin(), 'content-type': 'text/plain' },
        body: 'please',
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'send the body as application/json',
    );
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).toEqual(before);
  });

  it('refuses a cancel with a text/plain body, 415', async () => {
    const res = await fetch(`${gateway.url}/api/reservations/1-${randomUUID()}/cancel`, {
      method: 'POST',
      headers: { ...bearer(buyerToken('buyer-text')), 'content-type': 'text/plain' },
      body: 'x',
    });
    await expectProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
  });
});

describe('GET /api/admin/sales?limit=', () => {
  it.each(['0x10', '1e1', ' 16', '16.0', '+16', '016', '0', '101'])(
    'refuses %j: a page size is written in decimal digits, 1 to 100',
    async (limit) => {
      const res = await fetch(`${gateway.url}/api/admin/sales?limit=${encodeURIComponent(limit)}`, { headers: admin() });
      await expectProblem(res, 400, 'INVALID_REQUEST', 'limit: must be a whole number from 1 to 100', {
        errors: ['limit: must be a whole number from 1 to 100'],
      });
    },
  );

  it('takes 16 spelt as 16', async () => {
    expect((await fetch(`${gateway.url}/api/admin/sales?limit=16`, { headers: admin() })).status).toBe(200);
  });
});

describe('a sale name', () => {
  it.each([
    ['a lone surrogate', 'Launch \ud800'],
    ['a lone low surrogate', 'Launch \udc00 day'],
  ])('with %s is refused, not stored as U+FFFD', async (_, name) => {
    await expectProblem(await createSale(name), 400, 'INVALID_REQUEST', 'name: must be well-formed Unicode (it has a lone surrogate)', {
      errors: ['name: must be well-formed Unicode (it has a lone surrogate)'],
    });
  });

  it.each([
    ['NUL', 'Launch\u0000day'],
    ['a line feed', 'Launch\nday'],
    ['DEL', 'Launch\u007fday'],
    ['a C1 control', 'Launch\u0085day'],
    ['a right-to-left override', 'Launch \u202egnp.exe'],
    ['a left-to-right isolate', 'Launch \u2066day\u2069'],
    ['a right-to-left mark', 'Launch\u200f day'],
  ])('with %s is refused', async (_, name) => {
    const detail = 'name: must not contain control characters or bidirectional formatting characters';
    await expectProblem(await createSale(name), 400, 'INVALID_REQUEST', detail, { errors: [detail] });
  });

  it('in any script, with emoji and joiners, is taken as sent', async () => {
    const name = `Soldes d'été 🛍️ 限时抢购 תחילת מבצע ${randomUUID().slice(0, 8)}`;
    const res = await createSale(name);
    expect(res.status).toBe(201);
    expect(((await res.json()) as { name: string }).name).toBe(name);
  });
});
