import { describe, it } from 'vitest';
import type { TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer, expectProblem } from '../../../../test/support/http.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

// A path segment whose percent-escapes do not decode to UTF-8 is the client's mistake: 400, never a 500
// with a stack trace in the log.
describe('a path with a malformed percent-escape', () => {
  it.each([
    ['GET', '/api/sales/%ZZ', 'buyer'],
    ['GET', '/api/sales/%E0%A4%A', 'buyer'],
    ['POST', '/api/sales/%ZZ/purchase', 'buyer'],
    ['GET', '/api/reservations/%E0%A4%A', 'buyer'],
    ['GET', '/api/admin/sales/%ZZ/stats', 'admin'],
    ['POST', '/api/admin/sales/%ZZ/reconcile', 'admin'],
  ])('%s %s answers 400 INVALID_REQUEST', async (method, path, who) => {
    const token = who === 'admin' ? ctx.config.ADMIN_TOKEN : buyerToken('buyer-escapes');
    const res = await fetch(`${gateway.url}${path}`, { method, headers: bearer(token) });

    await expectProblem(res, 400, 'INVALID_REQUEST', 'the path has a malformed percent-escape');
  });
});
