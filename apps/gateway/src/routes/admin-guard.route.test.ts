import { beforeEach, describe, expect, it } from 'vitest';
import type { TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { manualClock } from '../../../../test/support/clock.ts';
import { bearer, expectProblem, requestWithHost } from '../../../../test/support/http.ts';
import { sampleOf } from '../../../../test/support/metrics-text.ts';
import { capturedLog } from '../../../../test/support/logs.ts';

// One gateway behind a "proxy" (TRUST_PROXY=1): each test plays clients at addresses of its own through
// X-Forwarded-For, on a clock it moves a minute at a time, so every test starts with fresh budgets.
const clock = manualClock();
const { logger, lines: logs } = capturedLog();
let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile(
  (started, server) => {
    ctx = started;
    gateway = server;
  },
  {
    env: { TRUST_PROXY: '1', ADMIN_AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: '3', ADMIN_AUTH_FAILURES_PER_MINUTE: '5' },
    now: clock.now,
    logger,
  },
);
beforeEach(() => {
  clock.advance(60_000);
  logs.length = 0;
});

const from = (address: string) => ({ 'x-forwarded-for': address });
const listSales = (address: string, token: string) =>
  fetch(`${gateway.url}/api/admin/sales`, { headers: { ...bearer(token), ...from(address) } });
const signIn = (address: string, token: string) =>
  fetch(`${gateway.url}/admin/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...from(address) },
    body: JSON.stringify({ token }),
  });
const counted = async (outcome: string) =>
  sampleOf(
    await gateway.gateway.metrics.registry.getSingleMetricAsString('flashsale_admin_auth_failures_total'),
    `flashsale_admin_auth_failures_total{outcome="${outcome}"}`,
  ) ?? 0;

const getWithHost = async (path: string, host: string, headers: Record<string, string> = {}) => {
  const res = await requestWithHost(`${gateway.url}${path}`, host, { headers });
  return { status: res.status, body: await res.text() };
};

describe('failed admin authentications', () => {
  // First in the file: the summary's 10-second window is the gateway's, opened by its first failure.
  it('are logged as a summary, not a line each, naming the address as TRUST_PROXY gives it', async () => {
    for (let i = 0; i < 20; i++) await listSales('192.0.2.9', 'wrong-token-wrong-token');

    // The first at once; the counts of the rest follow in one line 10 s later (not waited for here).
    expect(logs.filter((line) => line.msg === 'admin authentication failures')).toEqual([
      expect.objectContaining({ level: 40, failures: { invalid: 1 }, lastAddress: '192.0.2.9' }),
    ]);
  });
  it('are refused with 429, the token unchecked, past the per-address budget, while other addresses still get in', async () => {
    const wrong = 'not-the-admin-token-at-all';
    const before = { invalid: await counted('invalid'), limited: await counted('rate_limited') };
    for (let i = 0; i < 3; i++) expect((await listSales('203.0.113.1', wrong)).status).toBe(401);

    const refused = await listSales('203.0.113.1', wrong);
    await expectProblem(refused, 429, 'RATE_LIMITED', 'too many failed admin authentications: wait before trying again');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Even the right token waits: a guesser learns nothing from an answer it did not get.
    expect((await listSales('203.0.113.1', ctx.config.ADMIN_TOKEN)).status).toBe(429);
    expect((await listSales('203.0.113.2', ctx.config.ADMIN_TOKEN)).status).toBe(200);

    clock.advance(60_000);
    expect((await listSales('203.0.113.1', ctx.config.ADMIN_TOKEN)).status).toBe(200);
    expect({ invalid: (await counted('invalid')) - before.invalid, limited: (await counted('rate_limited')) - before.limited }).toEqual({
      invalid: 3,
      limited: 2,
    });
  });

  it('are held for every address once the process-wide budget is spent, guesses at the sign-in included', async () => {
    for (const address of ['198.51.100.1', '198.51.100.2', '198.51.100.3'])
      expect((await listSales(address, 'wrong-token-wrong-token')).status).toBe(401);
    for (const address of ['198.51.100.4', '198.51.100.5']) expect((await signIn(address, 'wrong-token-wrong-token')).status).toBe(401);

    expect((await signIn('198.51.100.6', ctx.config.ADMIN_TOKEN)).status).toBe(429);
    expect((await listSales('198.51.100.7', ctx.config.ADMIN_TOKEN)).status).toBe(429);
  });
});

describe('the admin Host allow-list', () => {
  it('refuses the admin API and the dashboard for a Host not allowed, as a DNS-rebinding page would send', async () => {
    for (const path of ['/api/admin/sales', '/admin/', '/admin/session']) {
      const answer = await getWithHost(path, 'attacker.example:3000', bearer(ctx.config.ADMIN_TOKEN));
      expect({ path, status: answer.status, code: (JSON.parse(answer.body) as { code: string }).code }).toEqual({
        path,
        status: 403,
        code: 'HOST_NOT_ALLOWED',
      });
    }
    expect((await getWithHost('/api/admin/sales', 'localhost:3000', bearer(ctx.config.ADMIN_TOKEN))).status).toBe(200);
    expect((await getWithHost('/api/admin/sales', '[::1]:3000', bearer(ctx.config.ADMIN_TOKEN))).status).toBe(200);
    // The buyers' side does not care which name it is reached by.
    expect((await getWithHost('/healthz', 'attacker.example')).status).toBe(200);
  });
});

describe('the dashboard audit lines', () => {
  it('name the client as TRUST_PROXY gives it, not the proxy', async () => {
    const res = await signIn('203.0.113.77', ctx.config.ADMIN_TOKEN);
    expect(res.status).toBe(200);
    expect(logs.find((line) => line.audit === 'dashboard_sign_in')).toMatchObject({ address: '203.0.113.77' });
  });
});
