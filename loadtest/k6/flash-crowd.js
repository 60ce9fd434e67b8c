// @ts-check
/**
 * k6 run loadtest/k6/flash-crowd.js   (k6 >= 0.45; BASE_URL, ADMIN_TOKEN, AUTH_SECRET from the environment)
 * The shape is in lib/shapes.js; after the run, `npm run loadtest:check -- loadtest/results/flash-crowd-k6.json`
 * checks the invariants in MySQL and Redis (`npm run loadtest -- flash-crowd` does both).
 */
import { SCENARIOS } from './lib/shapes.js';
import { k6Options, purchase, setupSales, summaryWriter } from './lib/k6-common.js';

const shape = SCENARIOS['flash-crowd'];

export const options = k6Options(shape);

export function setup() {
  return setupSales(shape);
}

/** @param {{ saleIds: number[], run: string }} data */
export default function (data) {
  purchase(shape, data);
}

export const handleSummary = summaryWriter('flash-crowd');
