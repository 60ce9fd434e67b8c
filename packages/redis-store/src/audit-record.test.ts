import { describe, expect, it } from 'vitest';
import { contextPerFile } from '../../../test/support/context.ts';
import { readAuditRecord, writeAuditRecord } from './audit-record.ts';
import { saleRef } from './store-ref.ts';

const env = contextPerFile();

/** Sale `saleId` of this file's context, bound as the store's `sale(id)` binds it. */
const inRedis = (saleId: number) => saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, saleId);

describe('the audit record', () => {
  it('is null until an audit has written one', async () => {
    expect(await readAuditRecord(inRedis(41))).toBeNull();
  });

  it('reads back what the last audit wrote', async () => {
    const first = { drift: 2, checkedAt: 1_700_000_000_123, remaining: 15, inFlightUnits: 0, deadLetteredUnits: 1, unitsInDb: 7 };
    const second = { ...first, drift: 0, checkedAt: first.checkedAt + 60_000 };

    await writeAuditRecord(inRedis(42), first);
    expect(await readAuditRecord(inRedis(42))).toEqual(first);
    await writeAuditRecord(inRedis(42), second);
    expect(await readAuditRecord(inRedis(42))).toEqual(second);
  });
});
