/**
 * The wrk load's feed (run as a process of its own by loadtest/soak/load.ts): signs buyers in batches
 * and writes their purchase requests, each exactly FEED_RECORD_LENGTH bytes, into the FIFO wrk reads
 * (loadtest/soak/purchase-feed.lua); it prints `ready` once the first requests are signed. The pipe
 * paces it: a write waits while wrk has not read the last ones, so it signs only as fast as wrk sends.
 * Ends when wrk closes its end (EPIPE), or on SIGTERM.
 *
 * FEED_PATH, FEED_RUN_ID, FEED_SALE_ID, FEED_HOST, FEED_RECORD_LENGTH, FEED_TTL_SECONDS, AUTH_SECRET.
 */
import { createWriteStream } from 'node:fs';
import { purchaseRequest, signBuyers } from './buyer-feed.ts';

const BATCH = 512;
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`feed writer: ${name} is not set`);
  return value;
};
const options = { runId: env('FEED_RUN_ID'), secret: env('AUTH_SECRET'), ttlSeconds: Number(env('FEED_TTL_SECONDS')) };
const saleId = Number(env('FEED_SALE_ID'));
const host = env('FEED_HOST');
const recordLength = Number(env('FEED_RECORD_LENGTH'));

// The first requests signed before wrk starts, so that it does not wait for them; then "ready".
let next = 0;
const nextBatch = (): string => {
  const records = signBuyers(options, next, BATCH).map((buyer) => purchaseRequest(host, saleId, buyer.token));
  next += BATCH;
  const odd = records.find((record) => record.length !== recordLength);
  if (odd !== undefined) {
    console.error(`feed writer: a request of ${odd.length} bytes, not ${recordLength}: the buyer ids or the token times changed width`);
    process.exit(1);
  }
  return records.join('');
};
const head = Array.from({ length: 8 }, nextBatch);
process.stdout.write('ready\n');

// Opening a FIFO waits for its reader: wrk, started once this process said ready.
const out = createWriteStream(env('FEED_PATH'), { highWaterMark: 1 << 18 });
out.on('error', (error: NodeJS.ErrnoException) => {
  // wrk is done and closed the pipe: what it had not read yet was never sent.
  if (error.code === 'EPIPE') process.exit(0);
  console.error(`feed writer: ${error.message}`);
  process.exit(1);
});
process.once('SIGTERM', () => process.exit(0));

function pump(): void {
  for (;;) {
    if (!out.write(head.shift() ?? nextBatch())) {
      out.once('drain', pump);
      return;
    }
  }
}
out.once('open', pump);
