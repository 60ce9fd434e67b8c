import { describe, expect, it } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { capturedLog } from '../../../../test/support/logs.ts';

// The reserve script failing for every buyer (a Redis away, or here a sale whose buyers record Redis
// cannot read): each buyer gets 503 with Retry-After, and the log gets a summary, not a line per request.
const { logger, lines: logs } = capturedLog();
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  { logger },
);

describe('purchases while the reserve script fails', () => {
  it('answers each 503 SERVICE_UNAVAILABLE and logs the failures summed up: the first at once, then a count at most every 10 s', async () => {
    const sale = await createLiveSale(ctx, { stock: 100 });
    // The script's HGET of the buyers hash fails (WRONGTYPE) for every buyer.
    await ctx.redis.set(saleKeys(ctx.config.REDIS_PREFIX, sale.id).buyers, 'not a hash');

    const started = Date.now();
    for (let i = 0; i < 60; i++) {
      const res = await fetch(`${gateway.url}/api/sales/${sale.id}/purchase`, {
        method: 'POST',
        headers: bearer(buyerToken(`buyer-${i}`)),
      });
      expect(res.headers.get('retry-after')).toBe('1');
      await expectProblem(res, 503, 'SERVICE_UNAVAILABLE', 'the sale cannot be reached right now, retry shortly');
    }
    const elapsed = Date.now() - started;

    const lines = logs.filter((line) => line.msg === 'reserve script failed');
    expect(lines[0]).toMatchObject({
      level: 40,
      requests: { failed: 1 },
      saleId: sale.id,
      err: expect.objectContaining({ message: expect.stringContaining('WRONGTYPE') }),
    });
    // One line per 10 s window the 60 requests spanned (however slow the machine), never one per request.
    expect(lines.length).toBeLessThanOrEqual(1 + Math.ceil(elapsed / 10_000));
  });
});
