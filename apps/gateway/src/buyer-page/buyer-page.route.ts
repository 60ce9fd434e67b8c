import { createHmac } from 'node:crypto';
import express, { Router, type Response } from 'express';
import { z } from 'zod';
import { AppError, parseSaleId, saleIdOfReservation } from '@flashsale/domain';
import type { Door } from '@flashsale/sales';
import type { GatewayDeps } from '../deps.ts';
import type { BuyerGate } from '../buyer-gate.ts';
import type { RequestLimits } from '../request-limits.ts';
import { jsonBodyOnly, parseOrThrow } from '../validation.ts';
import { encodingFor, loadPageAssets, type PageAsset } from './page-assets.ts';

// The page runs only its own scripts (and its proof-of-work worker), talks only to its own origin, and
// is never framed. Everything the server sends reaches the page through textContent, never innerHTML;
// this policy is the second line should one slip through.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; worker-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const PAGE_HEADERS = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  // The page's address may carry the buyer's token in its fragment for a moment; fragments are never
  // sent in a Referer, and neither is anything else of the page.
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  // The HTML is small and names the hashed files: asked again on each load, so a new release reaches
  // a reload at once.
  'Cache-Control': 'no-cache',
  Vary: 'Accept-Encoding',
};
/** A hashed file never changes under its name. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The development sign-in's tokens: long enough for a sale's wait, short enough to be no credential. */
const DEV_TOKEN_TTL_SECONDS = 4 * 3600;

const devSignIn = z.strictObject({
  buyer: z
    .string()
    .min(1)
    .max(64)
    .refine((id) => id.isWellFormed(), 'must be well-formed Unicode'),
});
const demoPayment = z.strictObject({ reservationId: z.string().min(1).max(64) });

async function send(
  res: Response,
  asset: PageAsset,
  acceptEncoding: string | undefined,
  status: number,
  headers: Record<string, string>,
): Promise<void> {
  const encoding = encodingFor(acceptEncoding);
  const body = await asset.body(encoding);
  res.status(status).set({ ...headers, 'Content-Type': asset.type, ...(encoding !== 'identity' && { 'Content-Encoding': encoding }) });
  res.send(body);
}

/** An HS256 buyer token as `npm run token` signs one: for the development sign-in only. */
function signDevToken(secret: string, sub: string): string {
  const iat = Math.floor(Date.now() / 1000);
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub, iat, exp: iat + DEV_TOKEN_TTL_SECONDS })}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/**
 * The buyer's page (GET /s/:saleId): the reference client of the API, plain files in public/buyer.
 * The page reads the sale and talks to the API itself; this route only says whether the sale exists
 * (one read, as GET /api/sales/:id reads it) and serves the files.
 *
 * Outside production two helpers stand in for a shop: POST /s/dev-sign-in mints a buyer token as
 * `npm run token` does, and POST /s/:saleId/demo-payment pays the buyer's own order as the payment
 * provider would (through the same use case as a signed provider event). In production neither exists
 * (404): the shop hands the page its buyer's token and takes the payment (docs/operations.md).
 */
export function buyerPageRouter(deps: GatewayDeps, buyerOf: BuyerGate, buyingLimits: RequestLimits, door: Door): Router {
  const { config, sales } = deps;
  const development = config.NODE_ENV !== 'production';
  const assets = loadPageAssets({ development, paymentUrl: config.BUYER_PAGE_PAYMENT_URL, signInUrl: config.BUYER_PAGE_SIGN_IN_URL });
  const router = Router({ strict: true });

  router.get('/s/assets/:file', async (req, res) => {
    const asset = assets.statics.get(req.params.file);
    if (!asset) return send(res, assets.notFound, req.headers['accept-encoding'], 404, PAGE_HEADERS);
    await send(res, asset, req.headers['accept-encoding'], 200, {
      'Cache-Control': IMMUTABLE,
      'X-Content-Type-Options': 'nosniff',
      Vary: 'Accept-Encoding',
    });
  });

  router.get('/s/:saleId', async (req, res) => {
    const saleId = parseSaleId(req.params.saleId);
    const found = saleId === null ? null : await sales.readBuyerSale(saleId);
    await send(res, found ? assets.page : assets.notFound, req.headers['accept-encoding'], found ? 200 : 404, PAGE_HEADERS);
  });

  if (!development) return router;

  router.post('/s/dev-sign-in', jsonBodyOnly, express.json({ limit: config.HTTP_MAX_BODY_BYTES, strict: true }), (req, res) => {
    const { buyer } = parseOrThrow(devSignIn, req.body ?? {});
    res.set('Cache-Control', 'no-store').json({ token: signDevToken(config.AUTH_SECRET, buyer) });
  });

  router.post(
    '/s/:saleId/demo-payment',
    jsonBodyOnly,
    express.json({ limit: config.HTTP_MAX_BODY_BYTES, strict: true }),
    async (req, res) => {
      const userId = buyerOf(req, buyingLimits);
      const { reservationId } = parseOrThrow(demoPayment, req.body ?? {});
      const saleId = saleIdOfReservation(reservationId);
      const found = saleId === null ? null : await sales.findReservationStatus(saleId, reservationId, userId);
      // Only the buyer's own order: anyone else's is as unknown as a made-up id.
      if (saleId === null || !found) throw new AppError('RESERVATION_NOT_FOUND');
      if (found.kind !== 'order') throw new AppError('ORDER_NOT_READY', undefined, {}, { 'Retry-After': '1' });
      // One event per reservation: paying twice answers what the first payment came to.
      const status = await sales.payReservation(
        { eventId: `demo_${reservationId}`, reservationId, saleId, amountCents: 100 * found.quantity },
        door,
      );
      res.set('Cache-Control', 'no-store').json({ status });
    },
  );
  return router;
}
