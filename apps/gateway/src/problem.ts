import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { AppError, ERRORS, type ErrorCode } from '@flashsale/domain';
import type { Logger } from '@flashsale/config';

/** Writes an RFC 9457 problem document with the catalogue's status and title for `code`. */
export function sendProblem(res: Response, error: AppError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res
    .status(error.status)
    .type('application/problem+json')
    .json({
      type: `https://flashsale.dev/problems/${error.code.toLowerCase().replaceAll('_', '-')}`,
      title: ERRORS[error.code].title,
      status: error.status,
      code: error.code,
      detail: error.message,
      ...error.extra,
    });
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

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    if (error instanceof AppError) return sendProblem(res, error);
    const type = (error as { type?: unknown }).type;
    const bodyCode = typeof type === 'string' ? BODY_ERRORS[type] : undefined;
    if (bodyCode) return sendProblem(res, new AppError(bodyCode, bodyCode === 'INVALID_REQUEST' ? 'the body is not valid JSON' : undefined));
    logger.error({ err: error, method: req.method, path: req.path }, 'request failed');
    sendProblem(res, new AppError('INTERNAL_ERROR', 'the request could not be completed'));
  };
}
