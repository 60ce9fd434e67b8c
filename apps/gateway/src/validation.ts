import type { Request, RequestHandler } from 'express';
import type { z } from 'zod';
import { AppError, parseSaleId } from '@flashsale/domain';

/** Parses with a zod schema; a failure is a 400 INVALID_REQUEST naming every bad field. */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`);
  throw new AppError('INVALID_REQUEST', { because: 'fields', problems: problems.join('; ') }, { errors: problems });
}

/** The sale id of a path; anything but a positive integer names no sale. */
export function saleIdParam(raw: string | string[] | undefined): number {
  const id = typeof raw === 'string' ? parseSaleId(raw) : null;
  if (id === null) throw new AppError('SALE_NOT_FOUND', { saleId: String(raw) });
  return id;
}

const JSON_TYPE = /^application\/(.+\+)?json\s*(;|$)/i;
const UTF8_JSON_TYPE = /^application\/json;\s*charset="?utf-8"?$/i;

/**
 * Refuses a body that is not JSON, or JSON in another charset than UTF-8. Without this, a `text/plain`
 * body would be ignored by the JSON parser and the request would go through as if it had no body; and
 * body-parser would decode UTF-16 or UTF-7 through iconv, so the same request could be spelt in bytes
 * no filter in front of the gateway reads the way we do. JSON exchanged between systems is UTF-8 (RFC 8259).
 */
export function requireJsonBody(contentType: string | undefined, contentLength: string | undefined, chunked: boolean): void {
  const hasBody = chunked || (contentLength !== undefined && contentLength !== '0');
  if (!hasBody) return;
  const type = contentType ?? '';
  if (!JSON_TYPE.test(type)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', { because: 'not_json' });
  if (type.includes(';') && !UTF8_JSON_TYPE.test(type) && !onlyUtf8Charsets(type)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', { because: 'not_utf8' });
  }
}

/** requireJsonBody on a request's own headers. */
export function requireJsonBodyOf(req: Request): void {
  requireJsonBody(req.headers['content-type'], req.headers['content-length'], req.headers['transfer-encoding'] !== undefined);
}

/** requireJsonBody as the middleware before a route's body parser. */
export const jsonBodyOnly: RequestHandler = (req, _res, next) => {
  requireJsonBodyOf(req);
  next();
};

/** Whether every charset parameter of a media type (there may be none) names UTF-8. */
function onlyUtf8Charsets(contentType: string): boolean {
  for (const parameter of contentType.split(';').slice(1)) {
    const equals = parameter.indexOf('=');
    if (equals < 0 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
    const value = parameter
      .slice(equals + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (value.toLowerCase() !== 'utf-8') return false;
  }
  return true;
}
