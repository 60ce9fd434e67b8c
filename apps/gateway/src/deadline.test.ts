import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { armRequestDeadline } from './deadline.ts';
import { sendProblem } from './problem.ts';

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A real server whose every request runs `handle`, and one request to it: status and body. */
async function ask(handle: (res: ServerResponse) => void): Promise<{ status: number; body: Record<string, unknown> }> {
  server = createServer((_req, res) => handle(res));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET' }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('armRequestDeadline (every route: the app and the crowd routes)', () => {
  it('answers 503 SERVICE_UNAVAILABLE with Retry-After to a request still unanswered past the deadline', async () => {
    const { status, body } = await ask((res) => void armRequestDeadline(res, 50, (error) => sendProblem(res, error)));
    expect(status).toBe(503);
    expect(body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: 'no answer within 50 ms: a backing service is slow or away, retry shortly',
    });
  });

  it('leaves alone a request answered before it, even if never cleared', async () => {
    const answers: string[] = [];
    const { status, body } = await ask((res) => {
      armRequestDeadline(res, 30, (error) => answers.push(error.code));
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(status).toBe(200);
    expect(body).toEqual({ ok: true });
    expect(answers).toEqual([]);
  });
});
