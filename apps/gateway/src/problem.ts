import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, DeadlineExceeded, ERRORS, detailOf, serviceUnavailable, type AppErrorArgs, type ErrorCode } from '@flashsale/domain';
import { summarisedLog, type Logger } from '@flashsale/runtime';
import { isStoreUnavailable } from '@flashsale/sales';

/** What a problem document says: a catalogue code, the detail, and any extra members. */
export interface Problem {
  code: ErrorCode;
  detail?: string;
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/**
 * A problem of the catalogue as plain data, its detail from the code's template: what the purchase path
 * answers with, where an Error (and its stack) is too dear to build per refusal.
 */
export function problemFor<C extends ErrorCode>(code: C, ...[params, extra, headers]: AppErrorArgs<C>): Problem {
  return { code, detail: detailOf(code, params), ...(extra && Object.keys(extra).length > 0 && { extra }), ...(headers && { headers }) };
}

/** The RFC 9457 problem document of a problem: the catalogue's status and title for its code. */
export function problemDocument({ code, detail, extra }: Problem): Record<string, unknown> {
  return {
    type: `https://flashsale.dev/problems/${code.toLowerCase().replaceAll('_', '-')}`,
    title: ERRORS[code].title,
    status: ERRORS[code].status,
    code,
    detail: detail ?? ERRORS[code].title,
    ...extra,
  };
}

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';

/** An answer rendered to its bytes: status, headers (media type and length included) and body. */
export interface RenderedAnswer {
  status: number;
  headers: OutgoingHttpHeaders;
  body: string;
}

function rendered(status: number, contentType: string, body: string, headers: Record<string, string> = {}): RenderedAnswer {
  return { status, headers: { ...headers, 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) }, body };
}

/** A JSON answer, rendered (the purchase's 202). */
export function renderJson(status: number, value: unknown): RenderedAnswer {
  return rendered(status, JSON_TYPE, JSON.stringify(value));
}

/** What a client error says, as a problem. */
function problemOf(error: AppError): Problem {
  return { code: error.code, detail: error.message, extra: error.extra, headers: error.headers };
}

/**
 * The RFC 9457 problem document of `problem`, rendered with the catalogue's status. Rendered once, it can
 * be written any number of times: the purchase path answers a known sold-out sale this way.
 */
export function renderProblem(problem: Problem | AppError): RenderedAnswer {
  const { code, detail, extra, headers } = problem instanceof AppError ? problemOf(problem) : problem;
  return rendered(ERRORS[code].status, PROBLEM_TYPE, JSON.stringify(problemDocument({ code, detail, extra })), headers);
}

/**
 * Writes a rendered answer with one writeHead and one end, on Node's response (Express's is one): no
 * res.json(), whose per-call work the purchase path cannot afford. Nothing once an answer went out
 * (the request deadline answered first).
 */
export function sendRendered(res: ServerResponse, answer: RenderedAnswer): void {
  if (res.headersSent) return;
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

/** Writes the RFC 9457 problem document of a problem or a client error: every problem+json answer of the gateway. */
export function sendProblem(res: ServerResponse, problem: Problem | AppError): void {
  sendRendered(res, renderProblem(problem));
}

export const notFound: RequestHandler = (req, res) => {
  sendProblem(res, new AppError('NOT_FOUND', { method: req.method, path: req.path }));
};

// body-parser's error types, mapped to the catalogue so clients see stable codes for them too.
const BODY_ERRORS: Record<string, ErrorCode> = {
  'entity.too.large': 'PAYLOAD_TOO_LARGE',
  'entity.parse.failed': 'INVALID_REQUEST',
  'encoding.unsupported': 'UNSUPPORTED_MEDIA_TYPE',
  'charset.unsupported': 'UNSUPPORTED_MEDIA_TYPE',
  'request.aborted': 'INVALID_REQUEST',
  'request.size.invalid': 'INVALID_REQUEST',
};

/** The client's error for a failure of body-parser (too large, not JSON, bad charset), if it is one. */
export function bodyErrorOf(error: unknown): AppError | undefined {
  const { type, limit } = (error ?? {}) as { type?: unknown; limit?: unknown };
  const code = typeof type === 'string' ? BODY_ERRORS[type] : undefined;
  if (code === 'PAYLOAD_TOO_LARGE' && typeof limit === 'number')
    return new AppError('PAYLOAD_TOO_LARGE', { because: 'over', limit: bytesText(limit) });
  if (code === 'INVALID_REQUEST') return new AppError(code, { because: 'not_json' });
  return code ? new AppError(code) : undefined;
}

/** A body limit as a person reads it: `1 KB` for 1024 (HTTP_MAX_BODY_BYTES's default), else in bytes. */
function bytesText(bytes: number): string {
  return bytes % 1024 === 0 ? `${bytes / 1024} KB` : `${bytes} bytes`;
}

/**
 * The client's error for a failure that is not the client's: Redis or MySQL away, too slow, overloaded
 * (503 with Retry-After; the request changed nothing or is safe to retry); undefined for a bug.
 */
function unavailableOf(error: unknown): AppError | undefined {
  return error instanceof DeadlineExceeded || isStoreUnavailable(error) ? serviceUnavailable() : undefined;
}

/**
 * A client error the framework raised while routing, before any handler ran: a path whose
 * percent-escapes do not decode (Express's router throws a URIError marked 400).
 */
function routingErrorOf(error: unknown): AppError | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  if (status !== 400) return undefined;
  return new AppError('INVALID_REQUEST', error instanceof URIError ? { because: 'bad_escape' } : undefined);
}

/** Answers a failure of a request on Node's response: whoever's the fault, with the catalogue's code. */
export type FailureAnswer = (error: unknown, res: ServerResponse, method: string | undefined, path: string) => void;

/**
 * How the gateway answers a failure, whichever route failed (the Express app's last handler, and the
 * routes ahead of the app). `onUnavailable` hears of every failure answered 503 because a store failed
 * (the gateway's Redis and MySQL error counters).
 */
export function failureAnswer(logger: Logger, onUnavailable: (error: unknown) => void = () => undefined): FailureAnswer {
  // A store away fails every request: one line per request would turn an outage (or a flood during one)
  // into a flood of the log. The first is logged at once, then counts at most every 10 s.
  const unavailableLog = summarisedLog<'answered503'>(logger, 'backing service unavailable', 'requests');
  return (error, res, method, path) => {
    // Answered already (the request deadline did): the handler's late outcome has no one to go to. A
    // store's failure is still counted: a MySQL that is away fails a statement only after the pool's
    // acquire timeout, long after the deadline answered 503.
    if (res.headersSent) {
      if (unavailableOf(error)) onUnavailable(error);
      return;
    }
    if (error instanceof AppError) return sendProblem(res, error);
    const clientError = bodyErrorOf(error) ?? routingErrorOf(error);
    if (clientError) return sendProblem(res, clientError);
    const unavailable = unavailableOf(error);
    if (unavailable) {
      onUnavailable(error);
      unavailableLog('answered503', { err: error, method, path });
      return sendProblem(res, unavailable);
    }
    logger.error({ err: error, method, path }, 'request failed');
    sendProblem(res, new AppError('INTERNAL_ERROR'));
  };
}

/** The app's last handler: the gateway's failure answer (see `failureAnswer`). */
export function errorHandler(answer: FailureAnswer): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => answer(error, res, req.method, req.path);
}
