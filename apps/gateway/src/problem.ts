import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { AppError, ERRORS, type ErrorCode } from '@flashsale/domain';
import type { Logger } from '@flashsale/config';

/** What a problem document says: a catalogue code, the detail, and any extra members. */
export interface Problem {
  code: ErrorCode;
  detail?: string;
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
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

/** Writes an RFC 9457 problem document with the catalogue's status and title for `code`. */
export function sendProblem(res: Response, error: AppError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).type('application/problem+json').json(problemDocument({ code: error.code, detail: error.message, extra: error.extra }));
}

export const notFound: RequestHandler = (req, res) => {
  sendProblem(res, new AppError('NOT_FOUND', `no route for ${req.method} ${req.path}`));
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
  const type = (error as { type?: unknown } | null)?.type;
  const code = typeof type === 'string' ? BODY_ERRORS[type] : undefined;
  return code ? new AppError(code, code === 'INVALID_REQUEST' ? 'the body is not valid JSON' : undefined) : undefined;
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    if (error instanceof AppError) return sendProblem(res, error);
    const bodyError = bodyErrorOf(error);
    if (bodyError) return sendProblem(res, bodyError);
    logger.error({ err: error, method: req.method, path: req.path }, 'request failed');
    sendProblem(res, new AppError('INTERNAL_ERROR', 'the request could not be completed'));
  };
}
