// The door's proof of work, in ALTCHA's format, off the page's thread: find the number n in
// [0, maxnumber] whose SHA-256 of salt + n (hex) is the challenge. Reports progress as it goes.
// crypto.subtle answers each digest asynchronously: asked a batch at a time, its overhead is paid once
// per batch rather than once per number (several times faster here).
'use strict';

const BATCH = 256;
const REPORT_EVERY = 4096;
const toBytes = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (pair) => parseInt(pair, 16));

function same(digest, target) {
  const bytes = new Uint8Array(digest);
  for (let i = 0; i < 32; i++) if (bytes[i] !== target[i]) return false;
  return true;
}

self.onmessage = async (event) => {
  const { algorithm, challenge, salt, maxnumber } = event.data;
  if (algorithm !== 'SHA-256' || typeof challenge !== 'string' || !/^[0-9a-f]{64}$/i.test(challenge) || !(maxnumber >= 0)) {
    self.postMessage({ error: `unsupported challenge (${algorithm})` });
    return;
  }
  const target = toBytes(challenge.toLowerCase());
  const encoder = new TextEncoder();
  const started = performance.now();
  for (let from = 0; from <= maxnumber; from += BATCH) {
    const to = Math.min(maxnumber, from + BATCH - 1);
    const digests = [];
    for (let number = from; number <= to; number++) digests.push(crypto.subtle.digest('SHA-256', encoder.encode(salt + number)));
    const found = (await Promise.all(digests)).findIndex((digest) => same(digest, target));
    if (found !== -1) {
      self.postMessage({ number: from + found, tookMs: Math.round(performance.now() - started) });
      return;
    }
    if (from % REPORT_EVERY === 0) self.postMessage({ progress: from / maxnumber });
  }
  self.postMessage({ error: 'no number solves this challenge' });
};
