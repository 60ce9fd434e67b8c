// @ts-check
/**
 * The load scenarios, as data: the k6 scripts and the Node runner (loadtest/runner) both play these, so
 * the two cannot drift apart. No k6 import here: Node loads this file too.
 *
 * A shape is an open model, like k6's arrival-rate executors: purchases start at `rate` per second
 * whatever the answers' latency, at most `maxInFlight` at once (beyond that an arrival is dropped and
 * counted, as k6 counts dropped iterations).
 */

/**
 * @typedef {{ seconds: number, rate: number }} Stage  ramp linearly to `rate` purchases/s over `seconds`
 * @typedef {{
 *   description: string,
 *   sales: number,
 *   stock: number,
 *   perUserLimit: number,
 *   buyers: number,
 *   pickBuyer: 'unique' | 'random' | 'round-robin',
 *   startRate: number,
 *   stages: Stage[],
 *   maxInFlight: number,
 *   p99Ms: number,
 * }} Shape
 */

/** @type {Record<'flash-crowd' | 'duplicate-storm' | 'sustained', Shape>} */
export const SCENARIOS = {
  'flash-crowd': {
    description: 'one sale, 40x more buyers than units; arrivals ramp to their peak within 3 s',
    sales: 1,
    stock: 500,
    perUserLimit: 1,
    buyers: 20000,
    pickBuyer: 'unique',
    startRate: 0,
    stages: [
      { seconds: 3, rate: 1500 },
      { seconds: 10, rate: 1500 },
      { seconds: 2, rate: 0 },
    ],
    maxInFlight: 256,
    p99Ms: 500,
  },
  'duplicate-storm': {
    description: 'few buyers retrying hard: 50 buyers, 1000 purchases/s between them, more units than buyers',
    sales: 1,
    stock: 1000,
    perUserLimit: 1,
    buyers: 50,
    pickBuyer: 'round-robin',
    startRate: 1000,
    stages: [{ seconds: 20, rate: 1000 }],
    maxInFlight: 128,
    p99Ms: 500,
  },
  sustained: {
    description: 'constant arrivals for minutes over many sales',
    sales: 10,
    stock: 5000,
    perUserLimit: 1,
    buyers: 200000,
    pickBuyer: 'random',
    startRate: 300,
    stages: [{ seconds: 300, rate: 300 }],
    maxInFlight: 128,
    p99Ms: 250,
  },
};

/** The p99 latency threshold of a smoke run: no answer within it is a hang, whatever else the machine does. */
const SMOKE_P99_MS = 30000;

/**
 * A short version of a shape for smoke runs (part of `npm test`): the same kind of load, about
 * `seconds` long, with stock and buyers cut so that it still sells out where the full one does.
 * @param {Shape} shape
 * @param {number} seconds
 * @returns {Shape}
 */
export function smokeOf(shape, seconds) {
  const total = shape.stages.reduce((sum, stage) => sum + stage.seconds, 0);
  const factor = seconds / total;
  const rate = (/** @type {number} */ r) => Math.max(1, Math.round(r / 4));
  // Object.assign, not a spread: k6 0.45's compiler refuses object spread.
  return Object.assign({}, shape, {
    stock: Math.max(5, Math.round(shape.stock / 10)),
    buyers: shape.pickBuyer === 'round-robin' ? Math.max(5, Math.round(shape.buyers / 5)) : Math.max(100, Math.round(shape.buyers / 10)),
    sales: Math.min(shape.sales, 3),
    startRate: shape.startRate === 0 ? 0 : rate(shape.startRate),
    stages: shape.stages.map((stage) => ({
      seconds: Math.max(0.2, stage.seconds * factor),
      rate: stage.rate === 0 ? 0 : rate(stage.rate),
    })),
    // A smoke run checks the runner, the shape and the ledger, not the speed (the benchmark's business):
    // on a machine running other work its p99 may be anything, so its threshold only catches a hang.
    p99Ms: SMOKE_P99_MS,
  });
}

/**
 * The arrival rate (purchases/s) `t` seconds into a shape; 0 once it is over.
 * @param {Shape} shape
 * @param {number} t
 */
export function rateAt(shape, t) {
  let from = shape.startRate;
  let start = 0;
  for (const stage of shape.stages) {
    if (t < start + stage.seconds) return from + ((stage.rate - from) * (t - start)) / stage.seconds;
    from = stage.rate;
    start += stage.seconds;
  }
  return 0;
}

/** @param {Shape} shape */
export function durationOf(shape) {
  return shape.stages.reduce((sum, stage) => sum + stage.seconds, 0);
}

/**
 * The outcome a purchase answer counts as, by status and problem code: the same names in k6 and Node.
 * @param {number} status
 * @param {string | undefined} code
 */
export function outcomeOf(status, code) {
  if (status === 202) return 'accepted';
  if (status === 410 && code === 'SOLD_OUT') return 'sold_out';
  if (status === 409 && code === 'INSUFFICIENT_STOCK') return 'sold_out';
  if (status === 409 && code === 'ALREADY_PURCHASED') return 'duplicate';
  if (status === 503 && code === 'SALE_PAUSED') return 'paused';
  if (status === 429) return 'rate_limited';
  if (status >= 500 || status === 0) return 'error';
  return 'other_refusal';
}

/** Every outcome, in report order. */
export const OUTCOMES = /** @type {const} */ (['accepted', 'sold_out', 'duplicate', 'paused', 'rate_limited', 'other_refusal', 'error']);
