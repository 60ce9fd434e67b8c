import { describe, expect, it } from 'vitest';
import { contextPerFile } from '../../../test/support/context.ts';
import { readAuditRecord, writeAuditRecord } from './audit-record.ts';
import { saleRef } from './store-ref.ts';

const env = contextPerFile();

describe('the audit record', () => {
  it('is null until an audit has written one', async () => {
    expect(await readAuditRecord(saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, 41))).toBeNull();
  });

  it('reads back what the last audit wrote', async () => {
    const first = { drift: 2, checkedAt: 1_700_000_000_123, remaining: 15, inFlightUnits: 0, deadLetteredUnits: 1, unitsInDb: 7 };
    const second = { ...first, drift: 0, checkedAt: first.checkedAt + 60_000 };

    await writeAuditRecord(saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, 42), first);
    expect(await readAuditRecord(saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, 42))).toEqual(first);
    await writeAuditRecord(saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, 42), second);
    expect(await readAuditRecord(saleRef(env.ctx.redis, env.ctx.config.REDIS_PREFIX, 42))).toEqual(second);
  });
});
