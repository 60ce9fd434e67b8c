/**
 * Every error a client can see: a stable code, its HTTP status and a title. Codes are part of the
 * HTTP API (docs/api.md, "Errors"; docs/openapi.yaml); add new ones, never rename.
 */
export const ERRORS = {
  INVALID_REQUEST: { status: 400, title: 'The request is not valid' },
  INVALID_QUEUE_TICKET: { status: 400, title: 'The queue ticket is not valid for this buyer and sale' },
  UNAUTHORIZED: { status: 401, title: 'Missing or invalid credentials' },
  CSRF_REJECTED: { status: 403, title: 'The request did not come from the dashboard' },
  NOT_ADMITTED: { status: 403, title: 'The sale is behind a waiting room and this buyer is not admitted now' },
  CHALLENGE_REQUIRED: { status: 403, title: 'Joining this waiting room needs a solved challenge of its own' },
  CLAIM_REQUIRED: { status: 403, title: "Joining this waiting room needs a claim in the buyer's token" },
  SALE_NOT_STARTED: { status: 403, title: 'The sale has not started yet' },
  HOST_NOT_ALLOWED: { status: 403, title: 'The admin surface does not answer for this host' },
  SALE_NOT_FOUND: { status: 404, title: 'No such sale' },
  RESERVATION_NOT_FOUND: { status: 404, title: 'No such reservation' },
  NOT_FOUND: { status: 404, title: 'No such resource' },
  ALREADY_PURCHASED: { status: 409, title: 'This buyer already has a reservation for this sale' },
  ORDER_LIMIT_REACHED: { status: 409, title: 'This buyer has opened as many orders in this sale as it allows' },
  INSUFFICIENT_STOCK: { status: 409, title: 'Fewer units are left than requested' },
  RECONCILE_IN_PROGRESS: { status: 409, title: 'A reconciliation of this sale is already running' },
  ORDER_NOT_READY: { status: 409, title: 'The reservation is not an order yet, retry shortly' },
  ORDER_NOT_CANCELLABLE: { status: 409, title: 'The order can no longer be cancelled' },
  SALE_ALREADY_ENDED: { status: 409, title: 'The sale has ended: it can no longer be paused, closed or given stock' },
  SALE_NOT_PAUSED: { status: 409, title: 'The sale is not paused by an operator' },
  QUEUE_NOT_OPEN: { status: 409, title: 'The waiting room of this sale is not open yet' },
  QUEUE_FULL: { status: 409, title: 'The waiting room of this sale is full' },
  SALE_NOT_QUEUED: { status: 409, title: 'The sale has no waiting room: buy directly' },
  SOLD_OUT: { status: 410, title: 'The sale is sold out' },
  SALE_ENDED: { status: 410, title: 'The sale has ended' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'The request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'The request body must be application/json' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'The Idempotency-Key was used with another request' },
  PAYMENT_EVENT_REUSED: { status: 422, title: 'The payment event id was received before with another payment' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  REBUY_COOLDOWN: { status: 429, title: 'This buyer closed orders in this sale and must wait before buying again' },
  INTERNAL_ERROR: { status: 500, title: 'Internal error' },
  SALE_PAUSED: { status: 503, title: 'The sale is paused, retry shortly' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'A backing service is unavailable' },
  LIVE_STREAM_LIMIT: { status: 429, title: 'Too many dashboard live streams are open' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** An error meant for the client: the gateway renders it as application/problem+json. */
export class AppError extends Error {
  override readonly name = 'AppError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    detail?: string,
    /** Extra members of the problem document, e.g. the existing `reservationId`. */
    readonly extra: Record<string, unknown> = {},
    /** Extra response headers, e.g. Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail ?? ERRORS[code].title);
    this.status = ERRORS[code].status;
  }
}

/** The answer a client gets when a backing service is away or too slow: retrying shortly is safe. */
export function serviceUnavailable(detail = 'a backing service is unavailable, retry shortly'): AppError {
  return new AppError('SERVICE_UNAVAILABLE', detail, {}, { 'Retry-After': '1' });
}
