import { describe, expect, it } from 'vitest';
import type { WatchedSale } from '@flashsale/order-store';
import type { SaleSnapshot } from '@flashsale/redis-store';
import { judge } from './sale-watch.ts';
import { watchedSale } from '../../../test/support/watched-sale.ts';

const sale: WatchedSale = watchedSale({ checkpoint: { reservations: 3, units: 3, at: 1000, streamId: '1000-0' } });
const snapshot: SaleSnapshot = {
  at: 2000,
  present: true,
  stock: 10,
  remaining: 6,
  generation: 'g1',
  paused: false,
  buyers: 4,
  returnedUnits: 0,
  lastEntryId: '1500-0',
  streamLength: 3,
  backlog: { lag: 0, pending: 0 },
  controlsVersion: 0,
  operatorPaused: false,
  memory: { countedBytes: 1_000_000, maxmemoryBytes: 0, refusesWrites: false },
};

describe('judging a sale state', () => {
  it('is healthy when the generation matches and nothing went back since the checkpoint', () => {
    expect(judge(sale, snapshot)).toEqual({ kind: 'healthy' });
    expect(judge({ ...sale, checkpoint: null }, snapshot)).toEqual({ kind: 'healthy' });
  });

  it('asks for a reconciliation when Redis no longer holds the sale', () => {
    expect(judge(sale, { ...snapshot, present: false })).toEqual({ kind: 'reconcile', reason: 'lost', why: 'the sale is not in Redis' });
  });

  it('asks for a reconciliation when Redis holds another generation than MySQL', () => {
    expect(judge(sale, { ...snapshot, generation: 'g0' })).toEqual({
      kind: 'reconcile',
      reason: 'stale',
      why: 'Redis holds generation g0, MySQL g1',
    });
  });

  it('asks for a reconciliation when Redis has fewer buyers or accepted units than at the checkpoint', () => {
    expect(judge(sale, { ...snapshot, buyers: 2 })).toMatchObject({ kind: 'reconcile', reason: 'lost' });
    expect(judge(sale, { ...snapshot, remaining: 8 })).toMatchObject({ kind: 'reconcile', reason: 'lost' });
  });

  it('asks for a reconciliation when the stream lost the entry it held at the checkpoint, even with the counters caught up', () => {
    expect(judge(sale, snapshot, false)).toEqual({
      kind: 'reconcile',
      reason: 'lost',
      why: 'Redis went back: the stream no longer holds entry 1000-0 it held at the checkpoint',
    });
  });

  it('asks for a reconciliation when the server holding the sale has another replication id than at the checkpoint (a failover, a restart), even with every count caught up', () => {
    const recorded = { ...sale, checkpoint: { ...sale.checkpoint!, replicationId: 'aaa' } };
    expect(judge(recorded, { ...snapshot, replicationId: 'aaa' })).toEqual({ kind: 'healthy' });
    expect(judge(recorded, { ...snapshot, replicationId: 'bbb' })).toEqual({
      kind: 'reconcile',
      reason: 'lost',
      why: "Redis's history of writes changed since the checkpoint (replication id aaa, now bbb): a failover or a restart",
    });
    // Unknown on either side (a checkpoint recorded before the id was kept): judged by the counts alone.
    expect(judge(sale, { ...snapshot, replicationId: 'bbb' })).toEqual({ kind: 'healthy' });
    expect(judge(recorded, snapshot)).toEqual({ kind: 'healthy' });
  });

  it('sees a paused sale as paused, neither healthy nor checkpointed', () => {
    expect(judge(sale, { ...snapshot, paused: true })).toEqual({ kind: 'paused' });
  });
});
