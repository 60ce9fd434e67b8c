import { request as httpRequest } from 'node:http';
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

/**
 * A request sent with the Host header the test chooses (fetch always sends the URL's own), answered as
 * a fetch Response.
 */
export function requestWithHost(
  url: string,
  host: string,
  { method = 'GET', headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Response> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method, headers: { ...headers, host } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
          resolve(new Response(Buffer.concat(chunks), { status: res.statusCode!, headers: responseHeaders }));
        });
      },
    );
    req.on('error', reject).end(body);
  });
}
