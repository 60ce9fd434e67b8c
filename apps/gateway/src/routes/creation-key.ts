import { createHash } from 'node:crypto';
import { AppError, REBUY_RULE_DEFAULTS } from '@flashsale/domain';
import type { CreationKey, NewSale } from '@flashsale/sales';

// An Idempotency-Key (draft-ietf-httpapi-idempotency-key-header) is an opaque string; here, 1 to 255
// visible ASCII characters, which every client library can send and MySQL can index.
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The key and the hash of the request it came with, or undefined without the header. */
export function creationKeyOf(header: string | string[] | undefined, input: NewSale): CreationKey | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) {
    throw new AppError('INVALID_REQUEST', { because: 'idempotency_key' });
  }
  // The parsed request, in a fixed order: the same sale sent with other spacing or key order is the same.
  // The door's terms and the rebuy rule are hashed only when they are not the plain case (an open sale,
  // the built-in rule): a recorded key's hash, made without them, goes on matching its retry.
  const rebuyRule = input.rebuyRule ?? REBUY_RULE_DEFAULTS;
  const defaultRule =
    rebuyRule.maxOrdersPerBuyer === REBUY_RULE_DEFAULTS.maxOrdersPerBuyer &&
    rebuyRule.rebuyCooldownSeconds === REBUY_RULE_DEFAULTS.rebuyCooldownSeconds;
  const canonical = JSON.stringify([
    input.name,
    input.stock,
    input.perUserLimit,
    input.startsAt.toISOString(),
    input.endsAt.toISOString(),
    input.paymentWindowSeconds,
    ...(input.admission ? [input.admission] : []),
    ...(defaultRule ? [] : [{ rebuyRule }]),
  ]);
  return { idempotencyKey: header, requestHash: createHash('sha256').update(canonical).digest('hex') };
}
