// @ts-check
/**
 * What every k6 scenario shares: configuration from the environment, HS256 buyer tokens signed in the
 * script, the sales made through the admin API in setup(), one purchase per iteration with a counter
 * per outcome, thresholds, and a JSON summary the invariant check reads (it names the sales).
 */
import http from 'k6/http';
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import { OUTCOMES, outcomeOf } from './shapes.js';

/** @typedef {import('./shapes.js').Shape} Shape */

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:3000';
const ADMIN_TOKEN = __ENV.ADMIN_TOKEN || 'dev-only-admin-token';
const AUTH_SECRET = __ENV.AUTH_SECRET || 'dev-only-auth-secret-change-me-0123456789';
/** A run id in the buyer ids, so two runs against one system never share a buyer. */
const RUN = __ENV.RUN_ID || String(Date.now());

const counters = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, new Counter(`purchases_${outcome}`)]));

/** @param {Shape} shape */
export function k6Options(shape) {
  return {
    scenarios: {
      purchases: {
        executor: 'ramping-arrival-rate',
        startRate: shape.startRate,
        timeUnit: '1s',
        preAllocatedVUs: Math.min(shape.maxInFlight, 64),
        maxVUs: shape.maxInFlight,
        stages: shape.stages.map((stage) => ({ target: stage.rate, duration: `${Math.round(stage.seconds * 1000)}ms` })),
      },
    },
    thresholds: {
      // No 5xx and no transport error: a refusal is an answer, a 500 or a dropped connection is not.
      purchases_error: ['count==0'],
      'http_req_duration{name:purchase}': [`p(99)<${shape.p99Ms}`],
    },
    setupTimeout: '60s',
  };
}

/** @param {string} text */
const b64 = (text) => encoding.b64encode(text, 'rawurl');

/** @param {string} sub */
function signToken(sub) {
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64(JSON.stringify({ sub, iat: now, exp: now + 3600 }))}`;
  return `${input}.${crypto.hmac('sha256', AUTH_SECRET, input, 'base64rawurl')}`;
}

/**
 * The sales of the run, created through the admin API, live before the first purchase.
 * @param {Shape} shape
 */
export function setupSales(shape) {
  const saleIds = [];
  for (let i = 0; i < shape.sales; i += 1) {
    const res = http.post(
      `${BASE_URL}/api/admin/sales`,
      JSON.stringify({
        name: `k6 ${RUN} #${i + 1}`,
        stock: shape.stock,
        perUserLimit: shape.perUserLimit,
        startsAt: new Date(Date.now() - 1000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      }),
      { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' } },
    );
    if (res.status !== 201) exec.test.abort(`creating a sale failed: ${res.status} ${String(res.body)}`);
    saleIds.push(Number(res.json('id')));
  }
  // A token per buyer would be megabytes copied into every VU; each VU signs the ones it needs instead.
  return { saleIds, run: RUN, sampleToken: signToken(`k6-${RUN}-probe`) };
}

/** @type {Map<number, string>} */
const tokens = new Map();

/**
 * @param {Shape} shape
 * @param {{ saleIds: number[], run: string }} data
 */
export function purchase(shape, data) {
  const n = exec.scenario.iterationInTest;
  const buyer = shape.pickBuyer === 'random' ? Math.floor(Math.random() * shape.buyers) : n % shape.buyers;
  let token = tokens.get(buyer);
  if (token === undefined) tokens.set(buyer, (token = signToken(`k6-${data.run}-${buyer}`)));
  const saleId = data.saleIds[n % data.saleIds.length];
  const res = http.post(`${BASE_URL}/api/sales/${saleId}/purchase`, '{"quantity":1}', {
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    tags: { name: 'purchase' },
    responseCallback: http.expectedStatuses(202, 409, 410, 429, 503),
  });
  let code;
  try {
    code = res.status >= 400 ? String(res.json('code')) : undefined;
  } catch {
    code = undefined;
  }
  counters[outcomeOf(res.status, code)].add(1);
}

/**
 * @param {string} scenario
 * @returns {(data: any) => Record<string, string>}
 */
export function summaryWriter(scenario) {
  return (data) => {
    const path = __ENV.SUMMARY_PATH || `loadtest/results/${scenario}-k6.json`;
    const count = (/** @type {string} */ name) => (data.metrics[name] ? data.metrics[name].values.count : 0);
    const lines = [`${scenario}: ${count('http_reqs')} requests`, ...OUTCOMES.map((o) => `  ${o}: ${count(`purchases_${o}`)}`)];
    const duration = data.metrics['http_req_duration{name:purchase}'] || data.metrics.http_req_duration;
    if (duration) lines.push(`  latency p90 ${duration.values['p(90)']} ms, p95 ${duration.values['p(95)']} ms, max ${duration.values.max} ms`);
    return {
      stdout: `${lines.join('\n')}\n`,
      [path]: JSON.stringify({ scenario, saleIds: data.setup_data ? data.setup_data.saleIds : [], metrics: data.metrics }, null, 2),
    };
  };
}
