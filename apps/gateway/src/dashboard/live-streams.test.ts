import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { createPrisma } from '@flashsale/order-store';
import { createLiveSale, salesWith, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { openLiveStream, signInSession, signOutSession, type DashboardSession } from '../../../../test/support/live-stream.ts';
import { createLiveViews } from './live-views.ts';

// GET /admin/live against a real gateway, Redis and MariaDB: the caps on streams, the refusal of an
// unknown sale, and the session checked while a stream runs.
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  { env: { DASHBOARD_INTERVAL_MS: '100', DASHBOARD_STREAMS_PER_SESSION: '2', DASHBOARD_STREAMS_PER_PROCESS: '3' } },
);

const signIn = () => signInSession(gateway.url, ctx.config.ADMIN_TOKEN);
const sessionKey = (session: DashboardSession) =>
  `${ctx.config.REDIS_PREFIX}:admin-session:${createHash('sha256').update(session.cookie.split('=')[1]!).digest('hex')}`;
const openStreams = () => gateway.gateway.liveStreams.count();

describe('the live streams of the dashboard', () => {
  it('refuses a stream of a sale MySQL does not hold before it opens: 404, no stream, no view read', async () => {
    const session = await signIn();
    const refused = await openLiveStream(gateway.url, session, '?sale=987654321');

    expect({ status: refused.status, code: refused.code }).toEqual({ status: 404, code: 'SALE_NOT_FOUND' });
    expect(openStreams()).toBe(0);
    expect(gateway.gateway.liveFeed.activeTopics).not.toContain('sale:987654321');
  });

  it('caps the streams of one session (2 here) and of the process (3 here): past either, 429 LIVE_STREAM_LIMIT with Retry-After', async () => {
    const sale = await createLiveSale(ctx, { name: 'Capped' });
    const [a, b, c] = await Promise.all([signIn(), signIn(), signIn()]);
    const a1 = await openLiveStream(gateway.url, a, `?sale=${sale.id}`);
    const a2 = await openLiveStream(gateway.url, a);
    const a3 = await openLiveStream(gateway.url, a);
    const b1 = await openLiveStream(gateway.url, b);
    const c1 = await openLiveStream(gateway.url, c);
    try {
      expect([a1.status, a2.status, b1.status]).toEqual([200, 200, 200]);
      expect({ status: a3.status, code: a3.code }).toEqual({ status: 429, code: 'LIVE_STREAM_LIMIT' });
      expect({ status: c1.status, code: c1.code }).toEqual({ status: 429, code: 'LIVE_STREAM_LIMIT' });
      const retry = await fetch(`${gateway.url}/admin/live`, { headers: { cookie: c.cookie } });
      expect(retry.headers.get('retry-after')).toBe('5');
      expect(openStreams()).toBe(3);

      // A stream closed gives its place back.
      a1.close();
      await expect.poll(() => openStreams() === 2).toBe(true);
      const c2 = await openLiveStream(gateway.url, c);
      expect(c2.status).toBe(200);
      c2.close();
    } finally {
      for (const stream of [a1, a2, b1]) stream.close();
    }
    await expect.poll(() => openStreams() === 0).toBe(true);
  });

  it('ends every stream of a session at its sign-out: nothing is sent after the 204', async () => {
    const sale = await createLiveSale(ctx, { name: 'Signed out' });
    const session = await signIn();
    const stream = await openLiveStream(gateway.url, session, `?sale=${sale.id}`);
    await expect.poll(() => stream.events.filter((e) => e.event === 'sale').length >= 2).toBe(true);

    expect(await signOutSession(gateway.url, session)).toBe(204);
    const signedOutAt = Date.now();
    const endedAt = await stream.ended;
    await sleep(500);

    expect(stream.events.filter((e) => e.at > signedOutAt && e.event !== 'history')).toEqual([]);
    expect(endedAt - signedOutAt).toBeLessThan(2000);
    expect(openStreams()).toBe(0);
  });

  it('ends a stream whose session ended elsewhere (signed out on another gateway process, expired, idle too long) at its next event', async () => {
    const sale = await createLiveSale(ctx, { name: 'Ended elsewhere' });
    const session = await signIn();
    const stream = await openLiveStream(gateway.url, session, `?sale=${sale.id}`);
    await expect.poll(() => stream.events.filter((e) => e.event === 'sale').length >= 2).toBe(true);

    // What a sign-out on another process, or the key's idle or absolute expiry, leaves behind: no key.
    await ctx.redis.del(sessionKey(session));
    const goneAt = Date.now();
    await stream.ended;
    await sleep(300);

    // At most an event whose check was already under way when the key went.
    expect(stream.events.filter((e) => e.at > goneAt + 50).length).toBe(0);
    expect(openStreams()).toBe(0);
  });

  it('does not count an open stream as use: the idle time runs while a page only watches', async () => {
    const session = await signIn();
    const idleMs = ctx.config.ADMIN_SESSION_IDLE_SECONDS * 1000;
    expect(await ctx.redis.pttl(sessionKey(session))).toBeLessThanOrEqual(idleMs);
    const stream = await openLiveStream(gateway.url, session);
    try {
      // Opening it was use; then the key's time only runs down while the events flow.
      const afterOpen = await ctx.redis.pttl(sessionKey(session));
      await expect.poll(() => stream.events.filter((e) => e.event === 'overview').length >= 4).toBe(true);
      const later = await ctx.redis.pttl(sessionKey(session));
      expect(later).toBeLessThan(afterOpen);
    } finally {
      stream.close();
    }
  });
});

describe('the live views', () => {
  it("read MySQL through the dashboard's own pool only: with the buyers' pool unreachable, they still answer", async () => {
    const sale = await createLiveSale(ctx, { name: 'Own pool' });
    // Nothing listens on port 1: a read through this client fails at once.
    const unreachable = createPrisma('mysql://root@127.0.0.1:1/nowhere', 1);
    const views = createLiveViews(
      {
        config: ctx.config,
        sales: salesWith(ctx, { prisma: unreachable }),
        dashboardSales: ctx.sales,
        logger: createLogger('test', 'silent'),
        readiness: undefined as never,
      },
      gateway.gateway.history,
      () => ({ flagged: 0, challenge: 0, flood: 0 }),
    );
    try {
      expect(await views.saleExists(sale.id)).toBe(true);
      await expect(views.read('overview')).resolves.toMatchObject({
        sales: expect.arrayContaining([expect.objectContaining({ id: sale.id })]),
      });
    } finally {
      await views.close();
      await unreachable.$disconnect();
    }
  });

  it("say which store failed, in words, never with the driver's message (the page shows it)", async () => {
    const unreachable = createPrisma('mysql://root@127.0.0.1:1/nowhere', 1);
    const views = createLiveViews(
      {
        config: ctx.config,
        sales: ctx.sales,
        dashboardSales: salesWith(ctx, { prisma: unreachable }),
        logger: createLogger('test', 'silent'),
        readiness: undefined as never,
      },
      gateway.gateway.history,
      () => ({ flagged: 0, challenge: 0, flood: 0 }),
    );
    try {
      await expect(views.read('overview')).rejects.toThrow(/^MySQL did not answer in time$/);
    } finally {
      await views.close();
      await unreachable.$disconnect();
    }
  });
});
