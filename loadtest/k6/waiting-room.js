// @ts-check
/**
 * k6 run loadtest/k6/waiting-room.js   (k6 >= 0.45; BASE_URL, ADMIN_TOKEN, AUTH_SECRET from the environment)
 *
 * A crowd through the door of a queued sale. setup() creates the sale through the admin API
 * (STOCK units, ADMIT_PER_SECOND, starting START_IN_SECONDS after setup, the waiting room open already);
 * each virtual user is one buyer who joins at once (all before the start: the draw decides their order)
 * with a solved proof of work where the sale asks one (CHALLENGE: the challenge fetched, ALTCHA's SHA-256
 * search done with k6/crypto, the solution sent with the join, as a browser's ALTCHA client does),
 * then asks for their state honouring Retry-After with their Queue-Ticket, buys once admitted, and pays
 * (a signed payment event, as the provider would send it; a share UNPAID_PERCENT never pays, so their
 * orders expire after PAYMENT_WINDOW_SECONDS and the units go to the next in line). Once every unit is
 * paid for, nothing can come back and the door tells everyone still waiting `sold_out`. The run ends when
 * every buyer has bought, or been told sold_out, expired or ended. teardown() waits for the orders to
 * reach MySQL and reads the sale's ledger (`consistent`) and its door.
 *
 * Environment: BUYERS (default 500), STOCK (100), ADMIT_PER_SECOND (50), TTL_SECONDS (30),
 * START_IN_SECONDS (10), MAX_SECONDS (120, the longest a buyer keeps going), PAYMENT_WINDOW_SECONDS (30),
 * UNPAID_PERCENT (0), CHALLENGE (pow; off or auto), CHALLENGE_MAX_NUMBER (10000: k6's SHA-256 is a call
 * into Go per hash, and 500 virtual users search on the same two cores as the gateway; a browser pays the
 * sale's, by default 100000).
 * Thresholds: no 5xx or transport error (a payment's 503 is delivered again, as a provider does); no
 * more paid orders than STOCK; no purchase refused NOT_ADMITTED to a buyer the door said was admitted
 * (before the turn's end); the ledger consistent.
 */
import http from 'k6/http';
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:3000';
const ADMIN_TOKEN = __ENV.ADMIN_TOKEN || 'dev-only-admin-token';
const AUTH_SECRET = __ENV.AUTH_SECRET || 'dev-only-auth-secret-change-me-0123456789';
const PAYMENT_WEBHOOK_SECRET = __ENV.PAYMENT_WEBHOOK_SECRET || 'dev-only-payment-webhook-secret-0123456789';
const RUN = __ENV.RUN_ID || String(Date.now());
const BUYERS = Number(__ENV.BUYERS || 500);
const STOCK = Number(__ENV.STOCK || 100);
const ADMIT_PER_SECOND = Number(__ENV.ADMIT_PER_SECOND || 50);
const TTL_SECONDS = Number(__ENV.TTL_SECONDS || 30);
const START_IN_SECONDS = Number(__ENV.START_IN_SECONDS || 10);
const MAX_SECONDS = Number(__ENV.MAX_SECONDS || 120);
const PAYMENT_WINDOW_SECONDS = Number(__ENV.PAYMENT_WINDOW_SECONDS || 30);
const UNPAID_PERCENT = Number(__ENV.UNPAID_PERCENT || 0);
const CHALLENGE = __ENV.CHALLENGE || 'pow';
const CHALLENGE_MAX_NUMBER = Number(__ENV.CHALLENGE_MAX_NUMBER || 10000);

const bought = new Counter('door_bought');
const paid = new Counter('door_paid');
const soldOut = new Counter('door_sold_out');
const expired = new Counter('door_expired');
const ended = new Counter('door_ended');
const refusedAdmitted = new Counter('door_purchase_refused_while_admitted');
const errors = new Counter('door_errors');
const polls = new Counter('door_polls');
const hashes = new Counter('door_challenge_hashes');
const waited = new Trend('door_seconds_to_admission');

export const options = {
  scenarios: {
    crowd: { executor: 'per-vu-iterations', vus: BUYERS, iterations: 1, maxDuration: `${MAX_SECONDS + START_IN_SECONDS + 30}s` },
  },
  thresholds: {
    door_errors: ['count==0'],
    // Units that come back (an unpaid order expiring) are bought again: purchases may exceed the stock,
    // payments may not (the ledger in teardown checks the rest).
    door_paid: [`count<=${STOCK}`],
    door_purchase_refused_while_admitted: ['count==0'],
    // A guard, not a benchmark: k6's 500 VUs, the gateway and a worker share two cores here.
    'http_req_duration{name:queue_status}': ['p(90)<2000'],
  },
  setupTimeout: '60s',
  teardownTimeout: '90s',
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
};

/** @param {string} text */
const b64 = (text) => encoding.b64encode(text, 'rawurl');

/** @param {string} sub */
function signToken(sub) {
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64(JSON.stringify({ sub, iat: now, exp: now + 3600 }))}`;
  return `${input}.${crypto.hmac('sha256', AUTH_SECRET, input, 'base64rawurl')}`;
}

const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

export function setup() {
  const startsAt = Date.now() + START_IN_SECONDS * 1000;
  const res = http.post(
    `${BASE_URL}/api/admin/sales`,
    JSON.stringify({
      name: `k6 waiting room ${RUN}`,
      stock: STOCK,
      paymentWindowSeconds: PAYMENT_WINDOW_SECONDS,
      startsAt: new Date(startsAt).toISOString(),
      endsAt: new Date(startsAt + 3600000).toISOString(),
      admission: {
        mode: 'queue',
        preQueueSeconds: 3600,
        admitPerSecond: ADMIT_PER_SECOND,
        admissionTtlSeconds: TTL_SECONDS,
        challenge: CHALLENGE,
        challengeMaxNumber: CHALLENGE_MAX_NUMBER,
      },
    }),
    { headers: adminHeaders },
  );
  if (res.status !== 201) exec.test.abort(`creating the sale failed: ${res.status} ${String(res.body)}`);
  return { saleId: Number(res.json('id')), startsAt };
}

/** @param {import('k6/http').RefinedResponse<any>} res */
function countError(res) {
  if (res.status === 0 || res.status >= 500) errors.add(1);
}

/**
 * Pays for a reservation as the payment provider would, once it is an order (409 ORDER_NOT_READY before).
 * @param {string} reservationId
 */
function pay(reservationId) {
  for (let attempt = 0; attempt < 30; attempt += 1) {
    const body = JSON.stringify({ id: `evt-${RUN}-${reservationId}`, type: 'payment.succeeded', reservationId, amountCents: 1000 });
    const t = Math.floor(Date.now() / 1000);
    const signature = `t=${t},v1=${crypto.hmac('sha256', PAYMENT_WEBHOOK_SECRET, `${t}.${body}`, 'hex')}`;
    const res = http.post(`${BASE_URL}/api/payments/events`, body, {
      headers: { 'content-type': 'application/json', 'payment-signature': signature },
      tags: { name: 'payment' },
      responseCallback: http.expectedStatuses(200, 409, 503),
    });
    // A provider delivers again after a 409 ORDER_NOT_READY or a 503 (the gateway's MySQL pool is small,
    // and a hundred buyers pay at once here); anything else is an error.
    if (res.status !== 503) countError(res);
    if (res.status === 200) return void paid.add(1);
    sleep(Number(res.headers['Retry-After'] || 1));
  }
}

/**
 * The join's body: with the sale's challenge solved where it asks one (ALTCHA: the number in
 * 0..maxnumber whose SHA-256 after the salt is the challenge; sent base64 of the JSON with the rest).
 * @param {string} url the queue's address
 * @param {Record<string, string>} headers
 */
function joinBody(url, headers) {
  if (CHALLENGE === 'off') return null;
  const res = http.get(`${url}/challenge`, { headers, tags: { name: 'queue_challenge' } });
  countError(res);
  /** @type {any} */
  const challenge = res.json();
  for (let number = 0; number <= challenge.maxnumber; number += 1) {
    if (crypto.sha256(`${challenge.salt}${number}`, 'hex') !== challenge.challenge) continue;
    hashes.add(number + 1);
    const { algorithm, salt, signature } = challenge;
    return JSON.stringify({
      solution: encoding.b64encode(JSON.stringify({ algorithm, challenge: challenge.challenge, number, salt, signature }), 'std'),
    });
  }
  errors.add(1);
  return null;
}

/** @param {{ saleId: number, startsAt: number }} data */
export default function (data) {
  const token = signToken(`k6-door-${RUN}-${exec.vu.idInTest}`);
  const headers = { authorization: `Bearer ${token}` };
  const url = `${BASE_URL}/api/sales/${data.saleId}/queue`;
  const body = joinBody(url, headers);
  let res = http.post(url, body, {
    headers: body === null ? headers : Object.assign({ 'content-type': 'application/json' }, headers),
    tags: { name: 'queue_join' },
  });
  const deadline = Date.now() + MAX_SECONDS * 1000;
  while (Date.now() < deadline) {
    // A join refused (403 CHALLENGE_REQUIRED: a solution the gateway did not take; 429: a budget) is an
    // error too: this crowd is honest.
    if (res.status !== 200) return void errors.add(1);
    const state = String(res.json('state'));
    if (state === 'admitted') {
      waited.add((Date.now() - data.startsAt) / 1000);
      const purchase = http.post(`${BASE_URL}/api/sales/${data.saleId}/purchase`, null, {
        headers,
        tags: { name: 'purchase' },
        responseCallback: http.expectedStatuses(202, 403, 409, 410),
      });
      countError(purchase);
      if (purchase.status === 202) {
        bought.add(1);
        if (exec.vu.idInTest % 100 >= UNPAID_PERCENT) pay(String(purchase.json('reservationId')));
      } else if (purchase.status === 403 && Date.now() < Date.parse(String(res.json('admittedUntil')))) refusedAdmitted.add(1);
      else if (purchase.status === 410) soldOut.add(1);
      return;
    }
    if (state === 'sold_out') return void soldOut.add(1);
    if (state === 'expired') return void expired.add(1);
    if (state === 'ended') return void ended.add(1);
    // Retry-After as the gateway says: polling faster changes nothing.
    sleep(Math.max(1, Number(res.headers['Retry-After'] || 1)));
    polls.add(1);
    res = http.get(url, {
      headers: { authorization: headers.authorization, 'queue-ticket': String(res.json('ticket')) },
      tags: { name: 'queue_status' },
    });
  }
}

/** @param {{ saleId: number }} data */
export function teardown(data) {
  /** @type {any} */
  let stats = null;
  for (let i = 0; i < 60; i += 1) {
    stats = http.get(`${BASE_URL}/api/admin/sales/${data.saleId}/stats`, { headers: adminHeaders }).json();
    if (stats && stats.inFlight === 0) break;
    sleep(1);
  }
  const door = http.post(`${BASE_URL}/api/admin/sales/${data.saleId}/admission`, '{}', { headers: adminHeaders }).json('door');
  // k6's console (the type library of this folder has no DOM).
  /** @type {{ log(line: string): void }} */ (/** @type {any} */ (globalThis).console).log(
    `waiting room: sale ${data.saleId} ledger consistent=${String(stats && stats.consistent)} ordersInDb=${String(stats && stats.ordersInDb)} remaining=${String(stats && stats.remaining)}; door ${JSON.stringify(door)}`,
  );
  if (!stats || stats.consistent !== true) exec.test.abort(`the ledger of sale ${data.saleId} is not consistent: ${JSON.stringify(stats)}`);
}
