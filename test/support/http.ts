import { expect } from 'vitest';
import { ERRORS, type ErrorCode } from '@flashsale/domain';

/**
 * Asserts a response is the RFC 9457 problem document of `code`: the status, the media type, and the
 * exact body (type, title, status, code, detail, plus any extra members the contract promises).
 */
export async function expectProblem(
  res: Response,
  status: number,
  code: ErrorCode,
  detail: string = ERRORS[code].title,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const body: unknown = await res.json();
  expect({ status: res.status, contentType: res.headers.get('content-type'), body }).toEqual({
    status,
    contentType: 'application/problem+json; charset=utf-8',
    body: {
      type: `https://flashsale.dev/problems/${code.toLowerCase().replaceAll('_', '-')}`,
      title: ERRORS[code].title,
      status,
      code,
      detail,
      ...extra,
    },
  });
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
