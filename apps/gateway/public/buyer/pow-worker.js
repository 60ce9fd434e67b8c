// The door's proof of work, in ALTCHA's format, off the page's thread: find the number n in
// [0, maxnumber] whose SHA-256 of salt + n (hex) is the challenge. Reports progress as it goes.
'use strict';

const toBytes = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (pair) => parseInt(pair, 16));
const REPORT_EVERY = 2000;

self.onmessage = async (event) => {
  const { algorithm, challenge, salt, maxnumber } = event.data;
  if (algorithm !== 'SHA-256' || typeof challenge !== 'string' || !/^[0-9a-f]{64}$/i.test(challenge)) {
    self.postMessage({ error: `unsupported challenge (${algorithm})` });
    return;
  }
  const target = toBytes(challenge.toLowerCase());
  const encoder = new TextEncoder();
  const started = performance.now();
  for (let number = 0; number <= maxnumber; number++) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(salt + number)));
    let same = true;
    for (let i = 0; i < 32 && same; i++) same = digest[i] === target[i];
    if (same) {
      self.postMessage({ number, tookMs: Math.round(performance.now() - started) });
      return;
    }
    if (number % REPORT_EVERY === 0) self.postMessage({ progress: number / maxnumber });
  }
  self.postMessage({ error: 'no number solves this challenge' });
};
