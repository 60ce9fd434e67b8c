import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP } from '@flashsale/redis-store/testing';
import { createOrderStore } from '@flashsale/order-store';
import { createLiveSale, createTestContext, redisNow, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, startGateway, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { keysUnderPrefix } from '../../../../test/support/sale-snapshot.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const uniqueName = () => `Admin test ${randomUUID()}`;
const iso = (ms: number) => new Date(ms).toISOString();

function createSale(body: unknown, headers: Record<string, string> = bearer(ctx.config.ADMIN_TOKEN)): Promise<Response> {
  return fetch(`${gateway.url}/api/admin/sales`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

function stats(saleId: number | string, headers: Record<string, string> = bearer(ctx.config.ADMIN_TOKEN)): Promise<Response> {
  return fetch(`${gateway.url}/api/admin/sales/${saleId}/stats`, { headers });
}

async function purchase(saleId: number, buyer: string): Promise<string> {
  const res = await fetch(`${gateway.url}/api/sales/${saleId}/purchase`, { method: 'POST', headers: bearer(buyerToken(buyer)) });
  expect(res.status).toBe(202);
  return ((await res.json()) as { reservationId: string }).reservationId;
}

describe('POST /api/admin/sales', () => {
  it('takes the payment window a sale sets for itself', async () => {
    const res = await createSale({
      name: uniqueName(),
      stock: 3,
      startsAt: '2030-01-01T00:00:00.000Z',
      endsAt: '2030-01-02T00:00:00.000Z',
      paymentWindowSeconds: 45,
    });
    const created = (await res.json()) as { id: number; paymentWindowSeconds: number };

    expect({ status: res.status, window: created.paymentWindowSeconds }).toEqual({ status: 201, window: 45 });
    expect((await ctx.prisma.sale.findUniqueOrThrow({ where: { id: created.id } })).paymentWindowSeconds).toBe(45);
  });

  it("takes the rebuy rule a sale sets for itself: answered, in MySQL, in Redis and in the operators' view", async () => {
    const res = await createSale({
      name: uniqueName(),
      stock: 3,
      startsAt: '2030-01-01T00:00:00.000Z',
      endsAt: '2030-01-02T00:00:00.000Z',
      maxOrdersPerBuyer: 5,
      rebuyCooldownSeconds: 0,
    });
    const created = (await res.json()) as { id: number; maxOrdersPerBuyer: number; rebuyCooldownSeconds: number };

    expect({
      status: res.status,
      maxOrdersPerBuyer: created.maxOrdersPerBuyer,
      rebuyCooldownSeconds: created.rebuyCooldownSeconds,
    }).toEqual({ status: 201, maxOrdersPerBuyer: 5, rebuyCooldownSeconds: 0 });
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: created.id } })).toMatchObject({
      maxOrdersPerBuyer: 5,
      rebuyCooldownSeconds: 0,
    });
    expect(await ctx.redis.hmget(saleKeys(ctx.config.REDIS_PREFIX, created.id).meta, 'rb_max', 'rb_cool')).toEqual(['5', '0']);
    // The page that starts at this sale (the list is newest first, `cursor` the id after it): the other
    // files' sales created meanwhile in the shared database cannot push it off the page.
    const list = (await (
      await fetch(`${gateway.url}/api/admin/sales?limit=1&cursor=${created.id + 1}`, { headers: bearer(ctx.config.ADMIN_TOKEN) })
    ).json()) as { sales: { id: number }[] };
    expect(list.sales).toEqual([expect.objectContaining({ id: created.id, maxOrdersPerBuyer: 5, rebuyCooldownSeconds: 0 })]);
  });

  it("gives a sale that sets no rebuy rule the gateway's MAX_ORDERS_PER_BUYER and REBUY_COOLDOWN_SECONDS", async () => {
    const configured = createTestContext({ MAX_ORDERS_PER_BUYER: '7', REBUY_COOLDOWN_SECONDS: '90' });
    const server = await startGateway(configured);
    try {
      const res = await fetch(`${server.url}/api/admin/sales`, {
        method: 'POST',
        headers: { ...bearer(configured.config.ADMIN_TOKEN), 'content-type': 'application/json' },
        body: JSON.stringify({ name: uniqueName(), stock: 3, startsAt: '2030-01-01T00:00:00.000Z', endsAt: '2030-01-02T00:00:00.000Z' }),
      });
      const created = (await res.json()) as { id: number };

      expect(created).toMatchObject({ maxOrdersPerBuyer: 7, rebuyCooldownSeconds: 90 });
      expect(await configured.prisma.sale.findUniqueOrThrow({ where: { id: created.id } })).toMatchObject({
        maxOrdersPerBuyer: 7,
        rebuyCooldownSeconds: 90,
      });
    } finally {
      await server.close();
      await configured.close();
    }
  });

  it('creates a sale: 201 with the sale echoed, in MySQL and live in Redis before the reply', async () => {
    const now = await redisNow(ctx.redis);
    const input = { name: uniqueName(), stock: 100, startsAt: iso(now - 60_000), endsAt: iso(now + 3_600_000), perUserLimit: 2 };

    const res = await createSale(input);

    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: number };
    // The sale's payment window and rebuy rule: the gateway's defaults when the request does not set them.
    expect(created).toEqual({
      id: created.id,
      ...input,
      paymentWindowSeconds: ctx.config.PAYMENT_WINDOW_SECONDS,
      maxOrdersPerBuyer: 3,
      rebuyCooldownSeconds: 30,
    });
    expect(Number.isInteger(created.id) && created.id > 0).toBe(true);
    expect(await ctx.prisma.sale.findUnique({ where: { id: created.id } })).toEqual({
      id: created.id,
      name: input.name,
      stock: 100,
      perUserLimit: 2,
      startsAt: new Date(input.startsAt),
      endsAt: new Date(input.endsAt),
      soldUnits: 0,
      createdAt: expect.any(Date),
      redisGeneration: expect.stringMatching(/^[0-9a-f-]{36}$/),
      // Its first checkpoint: nothing accepted, in the history of writes of the Redis server it went to.
      checkpointReservations: 0,
      checkpointUnits: 0,
      checkpointAt: expect.any(Date),
      checkpointStreamId: null,
      checkpointReplicationId: /^master_replid:(\w+)/m.exec(await ctx.redis.info('replication'))?.[1],
      lostReservations: 0,
      lostUnits: 0,
      paymentWindowSeconds: ctx.config.PAYMENT_WINDOW_SECONDS,
      generationAt: null,
      publishState: 'published',
      idempotencyKey: null,
      requestHash: null,
      operatorPausedAt: null,
      controlsVersion: 0,
      // An open sale: no door.
      admissionMode: 'open',
      preQueueSeconds: null,
      admitPerSecond: null,
      admissionTtlSeconds: null,
      noShowFactor: null,
      admissionPaused: false,
      showUpSeconds: null,
      challenge: null,
      challengeMaxNumber: null,
      requireClaim: null,
      maxQueueSize: null,
      maxOrdersPerBuyer: 3,
      rebuyCooldownSeconds: 30,
      // Nothing ordered yet (sale-counters.ts).
      ordersWritten: 0,
      unitsWritten: 0,
      cancelledOrders: 0,
      cancelledUnits: 0,
      expiredOrders: 0,
      expiredUnits: 0,
    });
    // Published under the generation MySQL recorded for it.
    const record = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: created.id } });
    expect(await ctx.redis.hget(saleKeys(ctx.config.REDIS_PREFIX, created.id).meta, 'gen')).toBe(record.redisGeneration);
    const live = await fetch(`${gateway.url}/api/sales/${created.id}`);
    expect(await live.json()).toEqual({ ...input, id: created.id, remaining: 100, status: 'active' });
    const groups = (await ctx.redis.xinfo('GROUPS', saleKeys(ctx.config.REDIS_PREFIX, created.id).stream)) as unknown[][];
    expect(groups.map((group) => group[1])).toEqual([ORDER_WRITERS_GROUP]);
  });

  it('trims the name, reads times with an offset as UTC and limits each buyer to 1 unit by default', async () => {
    const name = uniqueName();

    const res = await createSale({
      name: `  ${name}  `,
      stock: 5,
      startsAt: '2030-06-01T12:00:00+02:00',
      endsAt: '2030-06-01T13:30:00.250+02:00',
    });

    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: number };
    expect(created).toEqual({
      id: created.id,
      name,
      stock: 5,
      startsAt: '2030-06-01T10:00:00.000Z',
      endsAt: '2030-06-01T11:30:00.250Z',
      perUserLimit: 1,
      paymentWindowSeconds: 900,
      maxOrdersPerBuyer: 3,
      rebuyCooldownSeconds: 30,
    });
    expect(await (await fetch(`${gateway.url}/api/sales/${created.id}`)).json()).toMatchObject({
      perUserLimit: 1,
      remaining: 5,
      status: 'scheduled',
    });
  });

  it.each<[string, Record<string, string>, string]>([
    ['without a token', {}, 'an Authorization: Bearer token is required'],
    ['with a wrong admin token', bearer('not-the-admin-token'), 'the admin token is not valid'],
    ['with a buyer token', {}, 'the admin token is not valid'],
  ])('refuses a sale %s with 401 UNAUTHORIZED and creates nothing', async (label, headers, detail) => {
    const name = uniqueName();
    const keysBefore = await keysUnderPrefix(ctx);
    const auth = label === 'with a buyer token' ? bearer(buyerToken('buyer')) : headers;

    const res = await createSale({ name, stock: 5, startsAt: '2030-01-01T00:00:00.000Z', endsAt: '2030-01-02T00:00:00.000Z' }, auth);

    await expectProblem(res, 401, 'UNAUTHORIZED', detail);
    expect(await ctx.prisma.sale.count({ where: { name } })).toBe(0);
    expect(await keysUnderPrefix(ctx)).toEqual(keysBefore);
  });

  const valid = { stock: 5, startsAt: '2030-01-01T00:00:00.000Z', endsAt: '2030-01-02T00:00:00.000Z' };
  it.each<[string, Record<string, unknown>, string]>([
    ['an unknown field', { ...valid, id: 7 }, 'body: Unrecognized key: "id"'],
    ['stock 0', { ...valid, stock: 0 }, 'stock: Too small: expected number to be >=1'],
    ['a fractional stock', { ...valid, stock: 2.5 }, 'stock: Invalid input: expected int, received number'],
    ['stock as a string', { ...valid, stock: '5' }, 'stock: Invalid input: expected number, received string'],
    ['an end before the start', { ...valid, endsAt: '2029-12-31T23:59:59.999Z' }, 'endsAt: must be after startsAt'],
    ['an end equal to the start', { ...valid, endsAt: valid.startsAt }, 'endsAt: must be after startsAt'],
    ['a per-user limit above the stock', { ...valid, perUserLimit: 6 }, 'perUserLimit: must not exceed stock'],
    ['a per-user limit of 0', { ...valid, perUserLimit: 0 }, 'perUserLimit: Too small: expected number to be >=1'],
    ['a date that is not ISO 8601', { ...valid, startsAt: 'tomorrow' }, 'startsAt: Invalid ISO datetime'],
    ['a date without a time zone', { ...valid, startsAt: '2030-01-01T00:00:00' }, 'startsAt: Invalid ISO datetime'],
    ['an impossible date', { ...valid, startsAt: '2030-13-01T00:00:00Z' }, 'startsAt: Invalid ISO datetime'],
    // MySQL would store year 0042 and its driver read it back as 2042: MySQL and Redis disagreeing on the window.
    [
      'a start in year 0042',
      { ...valid, startsAt: '0042-01-01T00:00:00.000Z' },
      'startsAt: must be between 2000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z',
    ],
    [
      'a start before 2000',
      { ...valid, startsAt: '1999-12-31T23:59:59.999Z' },
      'startsAt: must be between 2000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z',
    ],
    // The gateway refuses a quantity above 1,000,000: a sale may not promise more per buyer.
    [
      'a per-user limit above 1,000,000',
      { ...valid, stock: 2_000_000, perUserLimit: 1_000_001 },
      'perUserLimit: Too big: expected number to be <=1000000',
    ],
    ['a payment window under 10 s', { ...valid, paymentWindowSeconds: 9 }, 'paymentWindowSeconds: Too small: expected number to be >=10'],
    [
      'a payment window over a day',
      { ...valid, paymentWindowSeconds: 86_401 },
      'paymentWindowSeconds: Too big: expected number to be <=86400',
    ],
    [
      'a fractional payment window',
      { ...valid, paymentWindowSeconds: 30.5 },
      'paymentWindowSeconds: Invalid input: expected int, received number',
    ],
    ['no order allowed per buyer', { ...valid, maxOrdersPerBuyer: 0 }, 'maxOrdersPerBuyer: Too small: expected number to be >=1'],
    ['over 1000 orders per buyer', { ...valid, maxOrdersPerBuyer: 1001 }, 'maxOrdersPerBuyer: Too big: expected number to be <=1000'],
    ['a fractional order count', { ...valid, maxOrdersPerBuyer: 2.5 }, 'maxOrdersPerBuyer: Invalid input: expected int, received number'],
    [
      'an order count as a string',
      { ...valid, maxOrdersPerBuyer: '3' },
      'maxOrdersPerBuyer: Invalid input: expected number, received string',
    ],
    ['a negative rebuy cooldown', { ...valid, rebuyCooldownSeconds: -1 }, 'rebuyCooldownSeconds: Too small: expected number to be >=0'],
    [
      'a rebuy cooldown over a day',
      { ...valid, rebuyCooldownSeconds: 86_401 },
      'rebuyCooldownSeconds: Too big: expected number to be <=86400',
    ],
    [
      'a null rebuy cooldown',
      { ...valid, rebuyCooldownSeconds: null },
      'rebuyCooldownSeconds: Invalid input: expected number, received null',
    ],
  ])('refuses a sale with %s with 400 INVALID_REQUEST and creates nothing', async (_, fields, detail) => {
    const name = uniqueName();
    const keysBefore = await keysUnderPrefix(ctx);

    await expectProblem(await createSale({ name, ...fields }), 400, 'INVALID_REQUEST', detail, { errors: [detail] });
    expect(await ctx.prisma.sale.count({ where: { name } })).toBe(0);
    expect(await keysUnderPrefix(ctx)).toEqual(keysBefore);
  });

  it('refuses a sale without a name, naming every missing field', async () => {
    const detail = 'name: Invalid input: expected string, received undefined; stock: Invalid input: expected number, received undefined';

    await expectProblem(await createSale({ startsAt: valid.startsAt, endsAt: valid.endsAt }), 400, 'INVALID_REQUEST', detail, {
      errors: detail.split('; '),
    });
  });

  it('names every bad field at once, and only the bad ones', async () => {
    const detail = 'stock: Too small: expected number to be >=1; endsAt: must be after startsAt';

    await expectProblem(
      await createSale({ name: uniqueName(), ...valid, stock: 0, endsAt: '2029-01-01T00:00:00.000Z' }),
      400,
      'INVALID_REQUEST',
      detail,
      {
        errors: detail.split('; '),
      },
    );
  });

  it('refuses a body that is not JSON with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const res = await fetch(`${gateway.url}/api/admin/sales`, {
      method: 'POST',
      headers: { ...bearer(ctx.config.ADMIN_TOKEN), 'content-type': 'text/plain' },
      body: JSON.stringify({ name: uniqueName(), ...valid }),
    });

    await expectProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
  });

  it.each([
    ['UTF-16', 'utf-16', (json: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(json, 'utf16le')])],
    ['UTF-7', 'utf-7', (json: string) => Buffer.from(json, 'utf8')],
    ['latin1', 'latin1', (json: string) => Buffer.from(json, 'latin1')],
  ])('refuses a sale sent in %s with 415 UNSUPPORTED_MEDIA_TYPE, creating nothing', async (_, charset, encode) => {
    const name = uniqueName();
    const keysBefore = await keysUnderPrefix(ctx);

    const res = await fetch(`${gateway.url}/api/admin/sales`, {
      method: 'POST',
      headers: { ...bearer(ctx.config.ADMIN_TOKEN), 'content-type': `application/json; charset=${charset}` },
      body: encode(JSON.stringify({ name, ...valid })),
    });

    await expectProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json in UTF-8');
    expect(await ctx.prisma.sale.count({ where: { name } })).toBe(0);
    expect(await keysUnderPrefix(ctx)).toEqual(keysBefore);
  });
});

describe('GET /api/admin/sales/:saleId/stats', () => {
  it('counts a reservation not yet written to MySQL as in flight, and the ledger as consistent', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    await purchase(sale.id, `buyer-${randomUUID()}`);

    const res = await stats(sale.id);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      saleId: sale.id,
      stock: 5,
      remaining: 4,
      inFlight: 1,
      ordersInDb: 0,
      unitsInDb: 0,
      ordersByStatus: {
        created: { orders: 0, units: 0 },
        paid: { orders: 0, units: 0 },
        cancelled: { orders: 0, units: 0 },
        expired: { orders: 0, units: 0 },
      },
      unitsReturned: 0,
      unitsAwaitingReturn: 0,
      refundsDue: { count: 0, amountCents: 0 },
      deadLettered: 0,
      consistent: true,
      lost: { reservations: 0, units: 0 },
      audit: null,
    });
  });

  it('balances once the order is in MySQL and the entry acknowledged', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    const buyer = `buyer-${randomUUID()}`;
    const reservationId = await purchase(sale.id, buyer);
    // A stand-in for the worker: take the entry, write the order, acknowledge.
    const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
    const [[, [[entryId]]]] = (await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'test', 'COUNT', 1, 'STREAMS', stream, '>')) as [
      [string, [[string, string[]]]],
    ];
    await createOrderStore(ctx.prisma)
      .sale(sale.id)
      .writeOrderBatch([
        { reservationId, saleId: sale.id, userId: buyer, quantity: 1, reservedAt: Date.now(), generation: sale.generation },
      ]);
    await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, entryId);

    expect(await (await stats(sale.id)).json()).toEqual({
      saleId: sale.id,
      stock: 5,
      remaining: 4,
      inFlight: 0,
      ordersInDb: 1,
      unitsInDb: 1,
      ordersByStatus: {
        created: { orders: 1, units: 1 },
        paid: { orders: 0, units: 0 },
        cancelled: { orders: 0, units: 0 },
        expired: { orders: 0, units: 0 },
      },
      unitsReturned: 0,
      unitsAwaitingReturn: 0,
      refundsDue: { count: 0, amountCents: 0 },
      deadLettered: 0,
      consistent: true,
      lost: { reservations: 0, units: 0 },
      audit: null,
    });
  });

  it('reports the ledger as inconsistent when MySQL holds units Redis still counts as remaining', async () => {
    const sale = await createLiveSale(ctx, { stock: 5 });
    await createOrderStore(ctx.prisma)
      .sale(sale.id)
      .writeOrderBatch([
        {
          reservationId: `${sale.id}-${randomUUID()}`,
          saleId: sale.id,
          userId: 'ghost',
          quantity: 1,
          reservedAt: Date.now(),
          generation: sale.generation,
        },
      ]);

    expect(await (await stats(sale.id)).json()).toEqual({
      saleId: sale.id,
      stock: 5,
      remaining: 5,
      inFlight: 0,
      ordersInDb: 1,
      unitsInDb: 1,
      ordersByStatus: {
        created: { orders: 1, units: 1 },
        paid: { orders: 0, units: 0 },
        cancelled: { orders: 0, units: 0 },
        expired: { orders: 0, units: 0 },
      },
      unitsReturned: 0,
      unitsAwaitingReturn: 0,
      refundsDue: { count: 0, amountCents: 0 },
      deadLettered: 0,
      consistent: false,
      lost: { reservations: 0, units: 0 },
      audit: null,
    });
  });

  it('answers an unknown sale with 404 SALE_NOT_FOUND', async () => {
    await expectProblem(await stats(2_147_483_647), 404, 'SALE_NOT_FOUND', 'no sale has the id 2147483647');
    await expectProblem(await stats('abc'), 404, 'SALE_NOT_FOUND', 'no sale has the id abc');
  });

  it('refuses a request without the admin token with 401 UNAUTHORIZED', async () => {
    const sale = await createLiveSale(ctx);

    await expectProblem(await stats(sale.id, {}), 401, 'UNAUTHORIZED', 'an Authorization: Bearer token is required');
    await expectProblem(await stats(sale.id, bearer(`${ctx.config.ADMIN_TOKEN}x`)), 401, 'UNAUTHORIZED', 'the admin token is not valid');
  });
});
