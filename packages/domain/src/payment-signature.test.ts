import { describe, expect, it } from 'vitest';
import { checkPaymentSignature, signPaymentEvent, SIGNATURE_TOLERANCE_SECONDS } from './payment-signature.ts';

const SECRET = 'a-secret-of-the-payment-provider-0123456789';
const BODY = '{"id":"evt_1","type":"payment.succeeded","reservationId":"7-x","amountCents":500}';
const NOW = 1_800_000_000;
const check = (header: string, now = NOW) => checkPaymentSignature(header, Buffer.from(BODY), SECRET, now);

describe('checkPaymentSignature', () => {
  it('accepts a timestamp up to the tolerance away from now, either way, and refuses one a second further as stale', () => {
    expect(SIGNATURE_TOLERANCE_SECONDS).toBe(300);
    expect([check(signPaymentEvent(SECRET, NOW - 300, BODY)), check(signPaymentEvent(SECRET, NOW + 300, BODY))]).toEqual([null, null]);
    expect([check(signPaymentEvent(SECRET, NOW - 301, BODY)), check(signPaymentEvent(SECRET, NOW + 301, BODY))]).toEqual([
      'stale',
      'stale',
    ]);
  });

  it('tells a missing, malformed or mismatched signature apart', () => {
    expect(checkPaymentSignature(undefined, Buffer.from(BODY), SECRET, NOW)).toBe('missing');
    expect(check('t=abc,v1=00')).toBe('malformed');
    expect(check(`t=${NOW}`)).toBe('malformed');
    expect(check(signPaymentEvent('another-secret', NOW, BODY))).toBe('mismatch');
    expect(check(signPaymentEvent(SECRET, NOW, BODY.replace('500', '1')))).toBe('mismatch');
  });
});
