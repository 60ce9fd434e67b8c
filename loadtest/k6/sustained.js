// @ts-check
/**
 * k6 run loadtest/k6/sustained.js   (k6 >= 0.45; BASE_URL, ADMIN_TOKEN, AUTH_SECRET from the environment;
 * SMOKE_SECONDS=2 plays the short version)
 * The shape is in lib/shapes.js; after the run, `npm run loadtest:check -- loadtest/results/sustained-k6.json`
 * checks the invariants in MySQL and Redis (`npm run loadtest -- sustained` does both).
 */
import { k6Options, purchase, setupSales, shapeFor, summaryWriter } from './lib/k6-common.js';

const shape = shapeFor('sustained');

export const options = k6Options(shape);

export function setup() {
  return setupSales(shape);
}

/** @param {{ saleIds: number[], run: string }} data */
export default function (data) {
  purchase(shape, data);
}

export const handleSummary = summaryWriter('sustained');
