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
import { OUTCOMES, SCENARIOS, durationOf, outcomeOf, smokeOf } from './shapes.js';

/** @typedef {import('./shapes.js').Shape} Shape */

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:3000';
const ADMIN_TOKEN = __ENV.ADMIN_TOKEN || 'dev-only-admin-token';
const AUTH_SECRET = __ENV.AUTH_SECRET || 'dev-only-auth-secret-change-me-0123456789';
/** A run id in the buyer ids, so two runs against one system never share a buyer. */
const RUN = __ENV.RUN_ID || String(Date.now());

const counters = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, new Counter(`purchases_${outcome}`)]));
/** The statuses the purchase endpoint answers with, each counted (the Node runner's report has them too). */
const STATUSES = [202, 400, 401, 403, 404, 409, 410, 429, 500, 503];
const statusCounters = Object.fromEntries(STATUSES.concat([0]).map((status) => [status, new Counter(`purchase_status_${status}`)]));

/**
 * The scenario's shape; with SMOKE_SECONDS set, the short version `npm test` plays (as the Node runner's
 * smoke does).
 * @param {import('./shapes.js').ScenarioName} name
 * @returns {Shape}
 */
export function shapeFor(name) {
  return __ENV.SMOKE_SECONDS ? smokeOf(SCENARIOS[name], Number(__ENV.SMOKE_SECONDS)) : SCENARIOS[name];
}

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
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)'],
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
        endsAt: new Date(Date.now() + 3600000).toISOString(),
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
  } catch (_notJson) {
    code = undefined;
  }
  counters[outcomeOf(res.status, code)].add(1);
  (statusCounters[res.status] || statusCounters[0]).add(1);
}

/**
 * handleSummary: a few lines on stdout, and the report the Node runner writes (loadtest/runner,
 * ScenarioReport), so `npm run loadtest:check` and whoever reads loadtest/results/ take either. The
 * invariants are left empty here: k6 cannot read MySQL; the check fills them in.
 * @param {import('./shapes.js').ScenarioName} scenario
 * @returns {(data: any) => Record<string, string>}
 */
export function summaryWriter(scenario) {
  return (data) => {
    const path = __ENV.SUMMARY_PATH || `loadtest/results/${scenario}-k6.json`;
    const metric = (/** @type {string} */ name) => data.metrics[name];
    const count = (/** @type {string} */ name) => (metric(name) ? metric(name).values.count : 0);
    /** @type {Record<string, number>} */
    const outcomes = {};
    for (const outcome of OUTCOMES) outcomes[outcome] = count(`purchases_${outcome}`);
    /** @type {Record<string, number>} */
    const statuses = {};
    for (const status of STATUSES.concat([0]))
      if (count(`purchase_status_${status}`) > 0) statuses[String(status)] = count(`purchase_status_${status}`);
    const requests = OUTCOMES.reduce((sum, outcome) => sum + outcomes[outcome], 0);
    const duration = metric('http_req_duration{name:purchase}') || metric('http_req_duration');
    const latency = (/** @type {string} */ stat) => (duration ? Math.round(duration.values[stat] * 10) / 10 : 0);
    const seconds = data.state ? data.state.testRunDurationMs / 1000 : durationOf(shapeFor(scenario));
    const thresholdsMet = Object.keys(data.metrics).every((name) => {
      const thresholds = data.metrics[name].thresholds;
      return !thresholds || Object.keys(thresholds).every((rule) => thresholds[rule].ok);
    });
    const report = {
      scenario,
      runner: 'k6',
      shape: shapeFor(scenario),
      saleIds: data.setup_data ? data.setup_data.saleIds : [],
      seconds,
      requests,
      throughput: Math.round(requests / seconds),
      dropped: count('dropped_iterations'),
      latencyMs: { p50: latency('med'), p90: latency('p(90)'), p99: latency('p(99)'), max: latency('max') },
      outcomes,
      statuses,
      invariants: [],
      passed: thresholdsMet,
    };
    const lines = [`${scenario} (k6): ${requests} purchases, ${report.throughput}/s`].concat(OUTCOMES.map((o) => `  ${o}: ${outcomes[o]}`));
    lines.push(
      `  latency p50 ${report.latencyMs.p50} ms, p90 ${report.latencyMs.p90} ms, p99 ${report.latencyMs.p99} ms, max ${report.latencyMs.max} ms`,
    );
    return { stdout: `${lines.join('\n')}\n`, [path]: JSON.stringify(report, null, 2) };
  };
}
