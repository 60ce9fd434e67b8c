import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import type { TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { createQueuedSale } from '../../../../test/support/door.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

/** An answer as it went over the wire: status, every header in order (the Date aside), the body's bytes. */
function raw(method: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${gateway.url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const pairs: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          if (res.rawHeaders[i] !== 'Date') pairs.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        resolve({ status: res.statusCode!, headers: pairs, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('GET /api/sales/:id/queue, answered ahead of Express', () => {
  it("answers a waiting buyer's poll byte for byte as their join (the Express route) does, with the ticket they sent", async () => {
    const { id } = await createQueuedSale(ctx, gateway.url, { startsIn: 60_000 });
    const auth = { authorization: `Bearer ${buyerToken(`buyer-${randomUUID()}`)}` };
    const joined = await raw('POST', `/api/sales/${id}/queue`, auth);
    const ticket = (JSON.parse(joined.body) as { ticket: string }).ticket;

    const polled = await raw('GET', `/api/sales/${id}/queue`, { ...auth, 'queue-ticket': ticket });
    const rejoined = await raw('POST', `/api/sales/${id}/queue`, auth);

    expect(joined.status).toBe(200);
    expect(polled).toEqual(rejoined);
    expect(polled.headers.slice(0, 4)).toEqual([
      'Retry-After: 30',
      'Cache-Control: no-store',
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(polled.body)}`,
    ]);
  });

  it('answers every spelling Express reads as the path exactly as the path itself, and HEAD with the same headers', async () => {
    const { id } = await createQueuedSale(ctx, gateway.url, { startsIn: 60_000 });
    const auth = { authorization: `Bearer ${buyerToken(`buyer-${randomUUID()}`)}` };
    const ticket = (JSON.parse((await raw('POST', `/api/sales/${id}/queue`, auth)).body) as { ticket: string }).ticket;
    const headers = { ...auth, 'queue-ticket': ticket };
    const canonical = await raw('GET', `/api/sales/${id}/queue`, headers);
    const spellings = [
      `/api/sales/${id}/queue/`,
      `/API/Sales/${id}/QUEUE`,
      `/api/sales/${[...String(id)].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}/queue`,
      `/api/sales/${id}/queue?via=link`,
    ];

    for (const path of spellings) expect(await raw('GET', path, headers), path).toEqual(canonical);
    expect(await raw('HEAD', `/api/sales/${id}/queue`, headers)).toEqual({ ...canonical, body: '' });
  });

  it("answers the Express app's problems for a sale id that is no number, a malformed escape, no token and another buyer's ticket", async () => {
    const { id } = await createQueuedSale(ctx, gateway.url, { startsIn: 60_000 });
    const auth = { authorization: `Bearer ${buyerToken(`buyer-${randomUUID()}`)}` };
    const other = { authorization: `Bearer ${buyerToken(`buyer-${randomUUID()}`)}` };
    const ticket = (JSON.parse((await raw('POST', `/api/sales/${id}/queue`, auth)).body) as { ticket: string }).ticket;

    const codes = await Promise.all([
      raw('GET', '/api/sales/abc/queue', auth),
      raw('GET', '/api/sales/%zz/queue', auth),
      raw('GET', `/api/sales/${id}/queue`, {}),
      raw('GET', `/api/sales/${id}/queue`, { ...other, 'queue-ticket': ticket }),
    ]);

    expect(codes.map(({ status, body }) => [status, (JSON.parse(body) as { code: string }).code])).toEqual([
      [404, 'SALE_NOT_FOUND'],
      [400, 'INVALID_REQUEST'],
      [401, 'UNAUTHORIZED'],
      [400, 'INVALID_QUEUE_TICKET'],
    ]);
    expect(codes.every(({ headers }) => headers.includes('Content-Type: application/problem+json; charset=utf-8'))).toBe(true);
  });
});
