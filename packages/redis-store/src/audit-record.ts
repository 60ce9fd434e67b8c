import type { SaleRef } from './store-ref.ts';

/**
 * A sale's last audit (`audit` in keys.ts): a hash of the figures below, written by the reconciler's
 * audit only, after each audit of the sale, and read by the admin stats. Its format is this module's.
 */
export interface AuditRecord {
  /** remaining + in flight + dead-lettered + units in MySQL - stock, as confirmed by a second look; 0 when it balanced. */
  drift: number;
  /** When the Redis side was read, epoch ms on Redis's clock. */
  checkedAt: number;
  remaining: number;
  inFlightUnits: number;
  deadLetteredUnits: number;
  unitsInDb: number;
}

const FIELDS = [
  'drift',
  'checkedAt',
  'remaining',
  'inFlightUnits',
  'deadLetteredUnits',
  'unitsInDb',
] as const satisfies readonly (keyof AuditRecord)[];

export async function writeAuditRecord({ redis, keys }: SaleRef, record: AuditRecord): Promise<void> {
  await redis.hset(keys.audit, Object.fromEntries(FIELDS.map((field) => [field, record[field]])));
}

/** The sale's last audit; null until an audit has run. */
export async function readAuditRecord({ redis, keys }: SaleRef): Promise<AuditRecord | null> {
  const [drift, checkedAt, remaining, inFlightUnits, deadLetteredUnits, unitsInDb] = await redis.hmget(keys.audit, ...FIELDS);
  if (checkedAt === null || checkedAt === undefined) return null;
  return {
    drift: Number(drift),
    checkedAt: Number(checkedAt),
    remaining: Number(remaining),
    inFlightUnits: Number(inFlightUnits),
    deadLetteredUnits: Number(deadLetteredUnits),
    unitsInDb: Number(unitsInDb),
  };
}
