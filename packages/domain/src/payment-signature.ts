import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The payment provider's signature on an event, in the scheme common providers use:
 * `Payment-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`. The timestamp is
 * inside what is signed, so an old event cannot be replayed with a fresh `t`; and events more than
 * `toleranceSeconds` away from now are refused, so a captured one is useless after a few minutes
 * (within them, the event id's record makes a replay answer the same and change nothing). Several v1
 * values may be sent (a provider rotating its secret); one that matches is enough.
 */

/** Why a signature was refused (for the log; the client gets one 401 for all). */
export type SignatureProblem = 'missing' | 'malformed' | 'stale' | 'mismatch';

export const SIGNATURE_TOLERANCE_SECONDS = 300;

export function signPaymentEvent(secret: string, timestampSeconds: number, rawBody: string | Buffer): string {
  return `t=${timestampSeconds},v1=${hmacOf(secret, timestampSeconds, rawBody)}`;
}

/** Null when `header` signs `rawBody` with `secret` within the tolerance of `nowSeconds`, else the problem. */
export function checkPaymentSignature(
  header: string | undefined,
  rawBody: Buffer,
  secret: string,
  nowSeconds: number,
  toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
): SignatureProblem | null {
  if (!header) return 'missing';
  let timestamp: number | undefined;
  const signatures: Buffer[] = [];
  for (const part of header.split(',')) {
    const equals = part.indexOf('=');
    if (equals < 0) return 'malformed';
    const key = part.slice(0, equals).trim();
    const value = part.slice(equals + 1).trim();
    if (key === 't') {
      if (!/^\d{1,12}$/.test(value) || timestamp !== undefined) return 'malformed';
      timestamp = Number(value);
    } else if (key === 'v1') {
      if (!/^[0-9a-f]{64}$/i.test(value)) return 'malformed';
      signatures.push(Buffer.from(value, 'hex'));
    }
    // Other schemes (v0, future versions) are ignored, as providers document.
  }
  if (timestamp === undefined || signatures.length === 0) return 'malformed';
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return 'stale';
  const expected = Buffer.from(hmacOf(secret, timestamp, rawBody), 'hex');
  return signatures.some((signature) => timingSafeEqual(signature, expected)) ? null : 'mismatch';
}

function hmacOf(secret: string, timestampSeconds: number, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestampSeconds}.`).update(rawBody).digest('hex');
}
