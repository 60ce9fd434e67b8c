/**
 * Every error a client can see: a stable code, its HTTP status, a title, and the wording of its detail.
 * Codes, statuses and titles are part of the HTTP API (docs/api.md, "Errors"; docs/openapi.yaml): add new
 * ones, never rename.
 *
 * The detail is written here, once, as a template whose `{name}` slots the thrower fills
 * (`new AppError('SALE_NOT_FOUND', { saleId })`): `detail` is the code's usual one, `causes` the templates
 * of its other causes, picked by name (`{ because: 'token_expired' }`). A code with neither, or thrown
 * without a cause where it has no `detail`, says its title.
 */
export const ERRORS = {
  INVALID_REQUEST: {
    status: 400,
    title: 'The request is not valid',
    causes: {
      fields: '{problems}',
      not_json: 'the body is not valid JSON',
      bad_escape: 'the path has a malformed percent-escape',
      idempotency_key: 'Idempotency-Key must be 1 to 255 visible ASCII characters',
      above_limit: 'quantity must be at most {perUserLimit} for this sale',
      stock_cap: 'add: the stock would exceed {maxStock} units (it is {stock})',
    },
  },
  INVALID_QUEUE_TICKET: {
    status: 400,
    title: 'The queue ticket is not valid for this buyer and sale',
    causes: {
      missing: 'showing up needs your Queue-Ticket: send the ticket your join or status answered',
      malformed: 'the Queue-Ticket is malformed; ask without it to get yours',
      bad_signature: 'the Queue-Ticket has a signature that does not match; ask without it to get yours',
      other_buyer: "the Queue-Ticket is another buyer's; ask without it to get yours",
      other_sale: "the Queue-Ticket is another sale's; ask without it to get yours",
    },
  },
  UNAUTHORIZED: {
    status: 401,
    title: 'Missing or invalid credentials',
    causes: {
      no_bearer: 'an Authorization: Bearer token is required',
      bad_token: 'the token is not valid',
      token_expired: 'the token has expired',
      bad_subject: 'the token subject must be a buyer id of 1 to {maxLength} characters',
      subject_not_unicode: 'the token subject is not well-formed Unicode',
      bad_admin_token: 'the admin token is not valid',
      session_closed: 'the dashboard session has expired or was closed: sign in again',
      not_signed_in: 'not signed in',
      signature_missing: 'the Payment-Signature is missing',
      signature_malformed: 'the Payment-Signature is malformed',
      signature_stale: 'the Payment-Signature is too old or too far ahead',
      signature_mismatch: 'the Payment-Signature is not valid',
    },
  },
  CSRF_REJECTED: {
    status: 403,
    title: 'The request did not come from the dashboard',
    causes: {
      other_site: 'a change sent from another site (Sec-Fetch-Site: {site})',
      other_origin: 'a change sent from another origin ({origin})',
      no_token: "the {header} header is missing or not this session's",
    },
  },
  NOT_ADMITTED: {
    status: 403,
    title: 'The sale is behind a waiting room and this buyer is not admitted now',
    detail: 'this sale is bought through its waiting room: join it (POST /api/sales/{saleId}/queue) and buy while your turn runs',
  },
  CHALLENGE_REQUIRED: {
    status: 403,
    title: 'Joining this waiting room needs a solved challenge of its own',
    causes: {
      missing:
        'this waiting room asks a solved challenge: GET /api/sales/{saleId}/queue/challenge, solve it, and join with { "solution": "<ALTCHA payload>" }',
      not_solved: "the solution does not solve a challenge of this sale's for this buyer (wrong, expired, or another's): get a new one",
      replayed: 'this solution was used before: get a new challenge (GET /api/sales/{saleId}/queue/challenge) and solve it',
    },
  },
  CLAIM_REQUIRED: {
    status: 403,
    title: "Joining this waiting room needs a claim in the buyer's token",
    detail: 'joining this waiting room needs the claim "{claim}" set to true in the buyer token',
  },
  SALE_NOT_STARTED: { status: 403, title: 'The sale has not started yet' },
  HOST_NOT_ALLOWED: {
    status: 403,
    title: 'The admin surface does not answer for this host',
    detail: 'the admin surface does not answer for the host {host}: see ADMIN_ALLOWED_HOSTS',
  },
  SALE_NOT_FOUND: { status: 404, title: 'No such sale', detail: 'no sale has the id {saleId}', causes: { view: 'no such view: {topic}' } },
  RESERVATION_NOT_FOUND: {
    status: 404,
    title: 'No such reservation',
    detail: 'no such reservation for this buyer',
    causes: { unknown: 'no such reservation' },
  },
  NOT_FOUND: { status: 404, title: 'No such resource', detail: 'no route for {method} {path}' },
  ALREADY_PURCHASED: { status: 409, title: 'This buyer already has a reservation for this sale' },
  ORDER_LIMIT_REACHED: {
    status: 409,
    title: 'This buyer has opened as many orders in this sale as it allows',
    detail: 'you have opened {maxOrdersPerBuyer} orders in this sale, the most it allows; cancelled and expired ones count',
  },
  INSUFFICIENT_STOCK: { status: 409, title: 'Fewer units are left than requested', detail: 'only {remaining} left' },
  RECONCILE_IN_PROGRESS: {
    status: 409,
    title: 'A reconciliation of this sale is already running',
    detail: 'a reconciliation of sale {saleId} is already running',
  },
  ORDER_NOT_READY: {
    status: 409,
    title: 'The reservation is not an order yet, retry shortly',
    detail: 'the reservation is not an order yet; retry shortly',
    causes: { payment_early: 'the reservation is not an order yet; deliver the event again shortly' },
  },
  ORDER_NOT_CANCELLABLE: {
    status: 409,
    title: 'The order can no longer be cancelled',
    detail: 'the order is {orderStatus}',
    causes: { no_order: 'the reservation was {orderStatus}: there is no order to cancel' },
  },
  SALE_ALREADY_ENDED: {
    status: 409,
    title: 'The sale has ended: it can no longer be paused, closed or given stock',
    detail: 'the sale ended at {endedAt}: it cannot be {change}',
  },
  SALE_NOT_PAUSED: {
    status: 409,
    title: 'The sale is not paused by an operator',
    detail: 'the sale is not paused by an operator (a reconciliation resumes its own pause)',
  },
  QUEUE_NOT_OPEN: { status: 409, title: 'The waiting room of this sale is not open yet', detail: 'the waiting room opens at {opensAt}' },
  QUEUE_FULL: {
    status: 409,
    title: 'The waiting room of this sale is full',
    detail: 'the waiting room of sale {saleId} holds its most buyers ({maxQueueSize})',
  },
  SALE_NOT_QUEUED: {
    status: 409,
    title: 'The sale has no waiting room: buy directly',
    detail: 'sale {saleId} has no waiting room: buy directly',
  },
  SOLD_OUT: { status: 410, title: 'The sale is sold out' },
  SALE_ENDED: { status: 410, title: 'The sale has ended', detail: 'sale {saleId} has ended' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'The request body is too large', causes: { over: 'The request body is larger than {limit}' } },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    title: 'The request body must be application/json',
    causes: { not_json: 'send the body as application/json', not_utf8: 'send the body as application/json in UTF-8' },
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    title: 'The Idempotency-Key was used with another request',
    detail: 'this Idempotency-Key was used with another request body',
  },
  PAYMENT_EVENT_REUSED: {
    status: 422,
    title: 'The payment event id was received before with another payment',
    detail: 'this event id was received before with another reservation or amount',
  },
  RATE_LIMITED: {
    status: 429,
    title: 'Too many requests',
    causes: { admin_failures: 'too many failed admin authentications: wait before trying again' },
  },
  REBUY_COOLDOWN: {
    status: 429,
    title: 'This buyer closed orders in this sale and must wait before buying again',
    detail: 'you cancelled or let expire orders in this sale: you may buy again in {retryAfterSeconds} s',
  },
  INTERNAL_ERROR: { status: 500, title: 'Internal error', detail: 'the request could not be completed' },
  SALE_PAUSED: {
    status: 503,
    title: 'The sale is paused, retry shortly',
    causes: { restoring: 'the sale is being restored; retry shortly' },
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    title: 'A backing service is unavailable',
    detail: 'a backing service is unavailable, retry shortly',
    causes: {
      deadline: 'no answer within {ms} ms: a backing service is slow or away, retry shortly',
      sale_unreachable: 'the sale cannot be reached right now, retry shortly',
      unreplicated: 'the reservation is not yet copied to a replica; retry to learn its outcome',
      creation_running: 'the first request with this Idempotency-Key has not finished yet; retry shortly',
      creation_answered: 'the request was answered before the sale could be published; nothing was created',
      publish_late: 'Redis answered too late to publish the sale; nothing was created',
      publish_timeout: 'the sale could not be published in time; nothing was created',
      reconcile_unfinished: 'the reconciliation did not finish: {reason}; is a reconciler running?',
      door_restoring: 'the sale is not in Redis now (being restored); the change is recorded and applies when it is',
    },
  },
  LIVE_STREAM_LIMIT: {
    status: 429,
    title: 'Too many dashboard live streams are open',
    causes: {
      per_session:
        'this session already has {limit} live streams open on this gateway process (DASHBOARD_STREAMS_PER_SESSION): close a page',
      per_process: 'this gateway process already serves {limit} live streams (DASHBOARD_STREAMS_PER_PROCESS)',
    },
  },
} as const satisfies Record<string, { status: number; title: string; detail?: string; causes?: Record<string, string> }>;

export type ErrorCode = keyof typeof ERRORS;

/** The `{name}` slots of a template: a word between braces (`{ "solution": ... }` is text, not a slot). */
type Slots<T extends string> = T extends `${string}{${infer Name}}${infer Rest}`
  ? (Name extends `${string}${' ' | '"'}${string}` | '' ? never : Name) | Slots<Rest>
  : never;
type Filled<T extends string> = { [Name in Slots<T>]: string | number };

type Entry<C extends ErrorCode> = (typeof ERRORS)[C];
/** A cause is named only to pick a template of `causes`: the usual detail takes none. */
type UsualParams<C extends ErrorCode> = (Entry<C> extends { detail: infer T extends string } ? Filled<T> : unknown) & {
  because?: undefined;
};
type CauseParams<C extends ErrorCode> =
  Entry<C> extends { causes: infer Causes extends Record<string, string> }
    ? { [Cause in keyof Causes & string]: { because: Cause } & Filled<Causes[Cause]> }[keyof Causes & string]
    : never;

/** What fills a code's detail: its usual template's slots, or a cause and that cause's slots. */
export type DetailParams<C extends ErrorCode> = C extends ErrorCode ? UsualParams<C> | CauseParams<C> : never;

/** The arguments after the code: the detail's parameters (optional when the usual detail has no slot), members, headers. */
export type AppErrorArgs<C extends ErrorCode> =
  Record<never, never> extends UsualParams<C>
    ? [params?: DetailParams<C>, extra?: Record<string, unknown>, headers?: Record<string, string>]
    : [params: DetailParams<C>, extra?: Record<string, unknown>, headers?: Record<string, string>];

const SLOT = /\{([A-Za-z]\w*)\}/g;

/** The detail of `code` with `params` filled in: the cause's template, else the usual one, else the title. */
export function detailOf<C extends ErrorCode>(code: C, params?: DetailParams<C>): string {
  const entry: { title: string; detail?: string; causes?: Record<string, string> } = ERRORS[code];
  const values = (params ?? {}) as Record<string, string | number | undefined>;
  const because = values.because;
  const template = (typeof because === 'string' ? entry.causes?.[because] : entry.detail) ?? entry.title;
  return template.replace(SLOT, (slot, name: string) => (name in values ? String(values[name]) : slot));
}

/** An error meant for the client: the gateway renders it as application/problem+json. */
export class AppError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'AppError';
  readonly status: number;
  /** Extra members of the problem document, e.g. the existing `reservationId`. */
  readonly extra: Record<string, unknown>;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers: Record<string, string>;
  constructor(
    readonly code: C,
    ...[params, extra = {}, headers = {}]: AppErrorArgs<C>
  ) {
    super(detailOf(code, params));
    this.status = ERRORS[code].status;
    this.extra = extra;
    this.headers = headers;
  }
}

/** The answer a client gets when a backing service is away or too slow: retrying shortly is safe. */
export function serviceUnavailable(params?: DetailParams<'SERVICE_UNAVAILABLE'>): AppError<'SERVICE_UNAVAILABLE'> {
  return new AppError('SERVICE_UNAVAILABLE', params, {}, { 'Retry-After': '1' });
}
