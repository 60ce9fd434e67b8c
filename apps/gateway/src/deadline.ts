import type { ServerResponse } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { serviceUnavailable, type AppError } from '@flashsale/domain';

/**
 * Arms a request's deadline (REQUEST_DEADLINE_MS): past `ms`, a response not yet answered gets 503
 * SERVICE_UNAVAILABLE through `answer`, whatever the request waits on. Returns the timer, to clear once
 * the request is answered. Every route's deadline goes through here: the app's (requestDeadline) and the
 * crowd routes' queue poll (routes/queue-status.ts).
 */
export function armRequestDeadline(res: ServerResponse, ms: number, answer: (error: AppError) => void): NodeJS.Timeout {
  return setTimeout(() => {
    if (!res.headersSent) answer(serviceUnavailable({ because: 'deadline', ms }));
  }, ms);
}

const TIMER = Symbol('requestDeadline');
type WithTimer = Response & { [TIMER]?: NodeJS.Timeout };

/**
 * Answers 503 SERVICE_UNAVAILABLE to a request still unanswered after `ms`, whatever it waits on: the
 * backstop behind the Redis command deadline and MySQL's statement limit (a black-holed MySQL connection
 * or a MySQL that ignores the limit). The handler's own late answer is then dropped by the error handler.
 */
export function requestDeadline(ms: number, answer: (res: Response, error: AppError) => void): RequestHandler {
  return (_req, res, next) => {
    const timer = armRequestDeadline(res, ms, (error) => answer(res, error));
    (res as WithTimer)[TIMER] = timer;
    res.once('close', () => clearTimeout(timer));
    next();
  };
}

/** For a route that waits longer by design (a reconciliation waiting for the drain): no request deadline. */
export function liftRequestDeadline(res: Response): void {
  clearTimeout((res as WithTimer)[TIMER]);
}
