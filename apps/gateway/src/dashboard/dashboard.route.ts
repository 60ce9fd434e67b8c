import { readFileSync } from 'node:fs';
import express, { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { AppError, parseSaleId } from '@flashsale/domain';
import type { GatewayDeps } from '../deps.ts';
import { clientAddress } from '../client-address.ts';
import { liftRequestDeadline } from '../deadline.ts';
import { parseOrThrow, requireJsonBodyOf } from '../validation.ts';
import { SESSION_COOKIE, checkSameOriginChange, sessionOf } from './admin-auth.ts';
import type { AdminGuard } from './admin-guard.ts';
import type { LiveFeed } from './live-feed.ts';
import type { LiveViews } from './live-views.ts';
import type { LiveStreams } from './live-streams.ts';
import { SessionChecks } from './session-checks.ts';

/** The dashboard's live parts, built once per process by createGateway. */
export interface DashboardParts {
  feed: LiveFeed;
  views: LiveViews;
  streams: LiveStreams;
}

/** The page and its assets: plain files, no build step, read once at start. */
const PUBLIC = new URL('../../public/admin/', import.meta.url);
const ASSETS: Record<string, { type: string; body: Buffer }> = Object.fromEntries(
  [
    ['index.html', 'text/html; charset=utf-8'],
    ['dashboard.js', 'text/javascript; charset=utf-8'],
    ['charts.js', 'text/javascript; charset=utf-8'],
    ['chart-list.js', 'text/javascript; charset=utf-8'],
    ['ledger.js', 'text/javascript; charset=utf-8'],
    ['queue-panel.js', 'text/javascript; charset=utf-8'],
    ['dashboard.css', 'text/css; charset=utf-8'],
  ].map(([file, type]) => [file!, { type: type!, body: readFileSync(new URL(file!, PUBLIC)) }]),
);

// The page runs only its own script and talks only to its own origin; it is never framed. With
// textContent everywhere (never innerHTML), a sale's name is text whatever it holds; this policy is the
// second line should one slip through.
const PAGE_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

const signIn = z.strictObject({ token: z.string().min(1).max(4096) });

/**
 * The operator's dashboard at /admin/ (the page, its session, its live stream). The controls it sends go
 * to /api/admin/*, with the session cookie and its CSRF token (admin-auth.ts).
 */
export function dashboardRouter(deps: GatewayDeps, { feed, views, streams }: DashboardParts, guard: AdminGuard): Router {
  const { config, sales } = deps;
  // Strict: /admin and /admin/ are two paths here (the first redirects to the second).
  const router = Router({ strict: true });
  // Audit lines name the client as TRUST_PROXY says, not the proxy in front.
  const addressOf = (req: Request) => clientAddress(req, config.TRUST_PROXY);
  const lifetime = { ttlMs: config.ADMIN_SESSION_TTL_SECONDS * 1000, idleMs: config.ADMIN_SESSION_IDLE_SECONDS * 1000 };
  const secure = (config.ADMIN_COOKIE_SECURE ?? (config.NODE_ENV === 'production' ? '1' : '0')) === '1';
  const cookie = (value: string, maxAgeSeconds: number) =>
    `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
  const sessions = new SessionChecks((id) => sales.readAdminSession(id, config.ADMIN_TOKEN));
  // A topic's event, built once for all the streams the feed hands it to (one after the other, in one
  // turn of the loop); kept until that turn ends, so nothing here outlives a tick.
  const framesOfTurn = new Map<string, { data: string; frame: string }>();
  const frameOf = (topic: string, data: string) => {
    const built = framesOfTurn.get(topic);
    if (built?.data === data) return built.frame;
    if (framesOfTurn.size === 0) setImmediate(() => framesOfTurn.clear());
    const frame = `event: ${topic === 'overview' ? 'overview' : 'sale'}\ndata: ${data}\n\n`;
    framesOfTurn.set(topic, { data, frame });
    return frame;
  };
  const send = (res: Response, file: string) => {
    const asset = ASSETS[file]!;
    res.set({ ...PAGE_HEADERS, 'Content-Type': asset.type }).send(asset.body);
  };

  router.get('/admin', (_req, res) => res.redirect(301, '/admin/'));
  // Served to anyone: without a session it shows the sign-in form and holds no data.
  router.get('/admin/', (_req, res) => send(res, 'index.html'));
  router.get('/admin/dashboard.js', (_req, res) => send(res, 'dashboard.js'));
  for (const script of ['charts.js', 'chart-list.js', 'ledger.js', 'queue-panel.js'])
    router.get(`/admin/${script}`, (_req, res) => send(res, script));
  router.get('/admin/dashboard.css', (_req, res) => send(res, 'dashboard.css'));

  // Signs in with the admin token, once: the token goes in the body of this one request, never in a URL
  // or in the page's storage; the browser keeps only the HttpOnly cookie naming a session held in Redis.
  router.post(
    '/admin/session',
    (req, _res, next) => {
      requireJsonBodyOf(req);
      // A sign-in from another site would log the victim's browser into the attacker's session.
      checkSameOriginChange(req, null);
      next();
    },
    express.json({ limit: config.HTTP_MAX_BODY_BYTES, strict: true }),
    async (req, res) => {
      const { token } = parseOrThrow(signIn, req.body ?? {});
      guard.checkToken(req, `Bearer ${token}`);
      const { id, session } = await sales.createAdminSession(config.ADMIN_TOKEN, lifetime);
      deps.logger.info({ audit: 'dashboard_sign_in', address: addressOf(req) }, 'dashboard: signed in');
      res
        .set({ 'Set-Cookie': cookie(id, config.ADMIN_SESSION_TTL_SECONDS), 'Cache-Control': 'no-store' })
        .json({ csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() });
    },
  );

  router.get('/admin/session', async (req, res) => {
    const open = await sessionOf(deps, req);
    if (!open) throw new AppError('UNAUTHORIZED', { because: 'not_signed_in' });
    res
      .set('Cache-Control', 'no-store')
      .json({ csrfToken: open.session.csrfToken, expiresAt: new Date(open.session.expiresAt).toISOString() });
  });

  router.delete('/admin/session', async (req, res) => {
    const open = await sessionOf(deps, req);
    if (open) {
      checkSameOriginChange(req, open.session);
      await sales.deleteAdminSession(open.id);
      // Its streams on this process end now; on other processes, at their next event (the check below).
      streams.endSession(open.id);
      deps.logger.info({ audit: 'dashboard_sign_out', address: addressOf(req) }, 'dashboard: signed out');
    }
    res.set('Set-Cookie', cookie('', 0)).status(204).end();
  });

  // One stream per page: the overview, and the sale the page shows (?sale=<id>). Opening one is the
  // operator's doing (it counts as use of the session); what it pushes afterwards is not. Refused before
  // anything is read for it past the caps (LiveStreams), and for a sale MySQL does not hold (through the
  // dashboard's own pool). Every event is sent only once the session is found still open (signed out,
  // expired or idle too long, the stream ends), and it ends when the session's time is up anyway, so the
  // page's reconnect meets the sign-in. EventSource reconnects a dropped one by itself after `retry`.
  router.get('/admin/live', async (req, res) => {
    const open = await sessionOf(deps, req);
    if (!open) throw new AppError('UNAUTHORIZED', { because: 'not_signed_in' });
    const rawSale = typeof req.query.sale === 'string' ? req.query.sale : undefined;
    const saleId = rawSale === undefined ? null : parseSaleId(rawSale);
    if (rawSale !== undefined && saleId === null) throw new AppError('SALE_NOT_FOUND', { saleId: rawSale });
    const slot = streams.take(open.id, () => res.end());
    const stops: (() => void)[] = [];
    let expiry: NodeJS.Timeout | undefined;
    let closed = false;
    res.once('close', () => {
      closed = true;
      clearTimeout(expiry);
      for (const stop of stops) stop();
      slot.release();
    });
    if (saleId !== null && !(await views.saleExists(saleId))) throw new AppError('SALE_NOT_FOUND', { saleId });
    if (closed || res.writableEnded) return;
    liftRequestDeadline(res);
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no' });
    res.write('retry: 2000\n\n');
    res.write(`event: history\ndata: ${JSON.stringify(views.snapshot(saleId))}\n\n`);
    // The events that arrive together (a tick's: the overview's and the sale's) leave in one write, after
    // one session check; checks and writes one after the other, so events leave in the order the feed
    // gave them.
    let sending = Promise.resolve();
    let waiting: string[] = [];
    const flush = () => {
      const frames = waiting.join('');
      waiting = [];
      sending = sending.then(async () => {
        const session = await sessions.check(open.id);
        // Ended meanwhile (the session's sign-out ends its streams before their 'close' is seen).
        if (closed || res.writableEnded) return;
        if (session === null) return void res.end();
        // Redis did not answer: the session cannot be vouched for, so these events are not sent.
        if (session !== undefined) res.write(frames);
      });
    };
    const listener = (topic: string, data: string) => {
      if (waiting.length === 0) setImmediate(flush);
      waiting.push(frameOf(topic, data));
    };
    stops.push(feed.subscribe('overview', listener));
    if (saleId !== null) stops.push(feed.subscribe(`sale:${saleId}`, listener));
    expiry = setTimeout(() => res.end(), Math.max(0, open.session.expiresAt - Date.now()));
  });
  return router;
}
