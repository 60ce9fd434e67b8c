import type { z } from 'zod';
import { AppError, parseSaleId } from '@flashsale/domain';

/** Parses with a zod schema; a failure is a 400 INVALID_REQUEST naming every bad field. */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`);
  throw new AppError('INVALID_REQUEST', problems.join('; '), { errors: problems });
}

/** The sale id of a path; anything but a positive integer names no sale. */
export function saleIdParam(raw: string | string[] | undefined): number {
  const id = typeof raw === 'string' ? parseSaleId(raw) : null;
  if (id === null) throw new AppError('SALE_NOT_FOUND', `no sale has the id ${String(raw)}`);
  return id;
}

/**
 * Refuses a body that is not JSON. Without this, a `text/plain` body would be ignored by the JSON parser
 * and the request would go through as if it had no body.
 */
export function requireJsonBody(contentType: string | undefined, contentLength: string | undefined, chunked: boolean): void {
  const hasBody = chunked || (contentLength !== undefined && contentLength !== '0');
  if (hasBody && !/^application\/(.+\+)?json\s*(;|$)/i.test(contentType ?? '')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
  }
}
