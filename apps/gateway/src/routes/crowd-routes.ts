import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { AppError } from '@flashsale/domain';
import type { PurchaseHandler } from '../purchase/purchase-handler.ts';
import type { QueueStatusHandler } from './queue-status.ts';
import { sendProblem } from '../problem.ts';
import { rateLimited } from '../request-limits.ts';

/**
 * The paths as Express's router would read `/api/sales/:saleId/purchase` and `/api/sales/:saleId/queue`,
 * which the rest of the API follows: letter case ignored, one trailing slash allowed, the query (or a
 * fragment) not part of it. The sale id is one path segment, percent-decoded below.
 */
const CROWD_PATH = /^\/api\/sales\/([^/?#]+)\/(purchase|queue)\/?(?:[?#]|$)/i;
/** `/api/sales/:saleId`, a sale's public read, as Express's router would match it. */
const SALE_READ_PATH = /^\/api\/sales\/[^/?#]+\/?(?:[?#]|$)/i;
/** An absolute-form request target (`http://host/path`, as sent to a proxy): its path is what routes. */
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*(\/.*)$/;

/** The path of a request target, or undefined for a target that is neither origin nor absolute form. */
function pathOf(url: string): string | undefined {
  return url.charCodeAt(0) === 0x2f ? url : ABSOLUTE_FORM.exec(url)?.[1];
}

/** `Allow: POST`, as Express answers an OPTIONS request for a path only POST is routed on. */
function answerOptions(res: ServerResponse): void {
  res
    .writeHead(200, { Allow: 'POST', 'Content-Length': '4', 'Content-Type': 'text/plain', 'X-Content-Type-Options': 'nosniff' })
    .end('POST');
}

/** 429 RATE_LIMITED, sent in `ms` (unless the client has gone by then). */
function refuseLater(res: ServerResponse, ms: number): void {
  const timer = setTimeout(() => sendProblem(res, rateLimited()), ms);
  res.once('close', () => clearTimeout(timer));
}

export interface CrowdHandlers {
  /** POST /api/sales/:saleId/purchase (purchase/purchase-handler.ts). */
  purchase: PurchaseHandler;
  /** GET /api/sales/:saleId/queue, a waiting buyer's poll (routes/queue-status.ts). */
  queueStatus: QueueStatusHandler;
  /**
   * The budget of public reads (request-limits.ts). A `GET /api/sales/:saleId` from an address that has
   * spent it this second, and has been told so (429, Retry-After 1), is refused here, before Express,
   * with the app's own answer, sent when the next second starts: when the address may send again. A
   * client that waits for its answers then sends no faster than its budget plus one request a second per
   * connection (at most MAX_CONNECTIONS_PER_ADDRESS), however fast it asks: a flood of made-up ids from
   * one address stops taking the process's time from its neighbours. A client that honours Retry-After
   * never meets the wait.
   */
  publicReads?: { spent(req: IncomingMessage): boolean; untilNextSecond(): number };
}

/**
 * The one way in for the two requests a flash crowd sends in bulk, ahead of the Express app, which routes
 * everything else: a purchase (authenticate, validate, one EVALSHA, answer; no MySQL: the reservation
 * reaches MySQL through the stream the script wrote it to) and a waiting buyer's status poll (answered
 * from their ticket and the door's frontier, no Redis). Express's dispatch (prototype swaps of req and
 * res, the router's layer walk, param decoding, the `next` chain, res.set and res.json) cost about as much
 * as the whole handler in the profile of each, so these are matched here by one regular expression, and
 * answer what Express's router would: any spelling of the path it would match, 400 for a malformed
 * percent-escape, `Allow: POST` to OPTIONS on the purchase. The queue's join (POST), HEAD and OPTIONS go
 * on to the app, as rare as they are.
 */
export function crowdRoutes({ purchase, queueStatus, publicReads }: CrowdHandlers, app: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method;
    if (method === 'POST' || method === 'OPTIONS' || method === 'GET') {
      const path = pathOf(req.url ?? '');
      const match = path === undefined ? null : CROWD_PATH.exec(path);
      // The path's last segment, any letter case: 'purchase' is 8 letters, 'queue' 5.
      const isPurchase = match !== null && match[2]!.length === 8;
      if (match !== null && (isPurchase ? method !== 'GET' : method === 'GET')) {
        const segment = match[1]!;
        let saleId = segment;
        if (segment.includes('%')) {
          try {
            saleId = decodeURIComponent(segment);
          } catch {
            return sendProblem(res, new AppError('INVALID_REQUEST', { because: 'bad_escape' }));
          }
        }
        if (!isPurchase) return queueStatus(req, res, saleId);
        return method === 'POST' ? purchase(req, res, saleId) : answerOptions(res);
      }
      // Not a crowd path (a purchase or a poll never pays for this look).
      if (method === 'GET' && publicReads && path !== undefined && SALE_READ_PATH.test(path) && publicReads.spent(req))
        return refuseLater(res, publicReads.untilNextSecond());
    }
    app(req, res);
  };
}
