import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { AppError } from '@flashsale/domain';
import type { PurchaseHandler } from '../purchase/purchase-handler.ts';
import { sendProblem } from '../problem.ts';

/**
 * The path as Express's router would read `/api/sales/:saleId/purchase`, which the rest of the API
 * follows: letter case ignored, one trailing slash allowed, the query (or a fragment) not part of it.
 * The sale id is one path segment, percent-decoded below.
 */
const PURCHASE_PATH = /^\/api\/sales\/([^/?#]+)\/purchase\/?(?:[?#]|$)/i;
/** An absolute-form request target (`http://host/path`, as sent to a proxy): its path is what routes. */
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*(\/.*)$/;

/** The raw sale id segment of a purchase path, or undefined for any other path. */
function purchaseSegment(url: string): string | undefined {
  const path = url.charCodeAt(0) === 0x2f ? url : ABSOLUTE_FORM.exec(url)?.[1];
  return path === undefined ? undefined : PURCHASE_PATH.exec(path)?.[1];
}

/** `Allow: POST`, as Express answers an OPTIONS request for a path only POST is routed on. */
function answerOptions(res: ServerResponse): void {
  res.writeHead(200, { Allow: 'POST', 'Content-Length': '4', 'Content-Type': 'text/plain', 'X-Content-Type-Options': 'nosniff' }).end('POST');
}

/**
 * POST /api/sales/:saleId/purchase: authenticate, validate, one EVALSHA, answer (purchase/purchase-handler.ts).
 * No MySQL here: the reservation reaches MySQL through the stream the script wrote it to.
 *
 * The one way in for a purchase, ahead of the Express app, which routes everything else: Express's
 * dispatch (prototype swaps of req and res, the router's layer walk, param decoding, the `next` chain)
 * cost about as much as the whole handler in the profile, so the route that takes the flash crowd is
 * matched here by one regular expression, and answers what Express's router would: any spelling of the
 * path it would match, 400 for a malformed percent-escape, `Allow: POST` to OPTIONS.
 */
export function purchaseRoute(handlePurchase: PurchaseHandler, app: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method;
    if (method === 'POST' || method === 'OPTIONS') {
      const segment = purchaseSegment(req.url ?? '');
      if (segment !== undefined) {
        let saleId = segment;
        if (segment.includes('%')) {
          try {
            saleId = decodeURIComponent(segment);
          } catch {
            return sendProblem(res, new AppError('INVALID_REQUEST', 'the path has a malformed percent-escape'));
          }
        }
        return method === 'POST' ? handlePurchase(req, res, saleId) : answerOptions(res);
      }
    }
    app(req, res);
  };
}
