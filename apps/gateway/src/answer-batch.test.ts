import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sendAfterReads } from './answer-batch.ts';
import { renderJson, sendProblem } from './problem.ts';
import { AppError, detailOf } from '@flashsale/domain';

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A real server whose every request runs `handle`; resolves with its port. */
async function serve(handle: (res: ServerResponse, path: string) => void): Promise<number> {
  server = createServer((req, res) => handle(res, req.url ?? ''));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function get(port: number, path: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) as unknown }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('sendAfterReads (the crowd paths answer after the loop has read its requests)', () => {
  it('writes nothing in the callback that queued the answer, then writes it in the same loop turn', async () => {
    const seen: string[] = [];
    const port = await serve((res) => {
      sendAfterReads(res, renderJson(202, { ok: true }));
      seen.push(`queued, sent ${res.headersSent}`);
      // A timer of 0 ms runs in the next turn; an immediate queued after the answer's runs after it.
      setImmediate(() => seen.push(`after the batch, sent ${res.headersSent}`));
    });
    const answer = await get(port, '/');
    expect(answer).toEqual({ status: 202, body: { ok: true } });
    expect(seen).toEqual(['queued, sent false', 'after the batch, sent true']);
  });

  it('answers every request queued in one turn, each with its own answer', async () => {
    const port = await serve((res, path) => sendAfterReads(res, renderJson(200, { path })));
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => get(port, `/${i}`)));
    expect(answers).toEqual(Array.from({ length: 50 }, (_, i) => ({ status: 200, body: { path: `/${i}` } })));
  });

  it('drops an answer to a request answered meanwhile (the request deadline came first)', async () => {
    const port = await serve((res) => {
      sendAfterReads(res, renderJson(202, { late: true }));
      sendProblem(res, new AppError('SERVICE_UNAVAILABLE', { because: 'deadline', ms: 1 }));
    });
    const answer = await get(port, '/');
    expect(answer).toMatchObject({
      status: 503,
      body: { code: 'SERVICE_UNAVAILABLE', detail: detailOf('SERVICE_UNAVAILABLE', { because: 'deadline', ms: 1 }) },
    });
  });
});
