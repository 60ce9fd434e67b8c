import { describe, expect, it } from 'vitest';
import { planControl, type ControlledSale } from './sale-control.ts';
import { MAX_STOCK } from './sale.ts';

const sale: ControlledSale = { version: 3, stock: 10, startsAt: 1_000, endsAt: 10_000, operatorPaused: false };
const now = 5_000;

describe('planControl', () => {
  it('pauses a live sale, and leaves a sale the operator already paused as it is', () => {
    expect(planControl(sale, { action: 'pause' }, now)).toEqual({ kind: 'change', change: { operatorPaused: true } });
    expect(planControl({ ...sale, operatorPaused: true }, { action: 'pause' }, now)).toEqual({ kind: 'unchanged' });
  });

  it('resumes only a sale the operator paused', () => {
    expect(planControl({ ...sale, operatorPaused: true }, { action: 'resume' }, now)).toEqual({
      kind: 'change',
      change: { operatorPaused: false },
    });
    expect(planControl(sale, { action: 'resume' }, now)).toMatchObject({ kind: 'refused', error: { code: 'SALE_NOT_PAUSED' } });
  });

  it('closes at now, also a sale that has not started', () => {
    expect(planControl(sale, { action: 'close' }, now)).toEqual({ kind: 'change', change: { endsAt: now } });
    expect(planControl({ ...sale, startsAt: 8_000 }, { action: 'close' }, now)).toEqual({ kind: 'change', change: { endsAt: now } });
  });

  it('adds stock up to MAX_STOCK in all', () => {
    expect(planControl(sale, { action: 'add_stock', units: 5 }, now)).toEqual({ kind: 'change', change: { stock: 15 } });
    expect(planControl(sale, { action: 'add_stock', units: MAX_STOCK - 10 }, now)).toEqual({
      kind: 'change',
      change: { stock: MAX_STOCK },
    });
    expect(planControl(sale, { action: 'add_stock', units: MAX_STOCK - 9 }, now)).toMatchObject({
      kind: 'refused',
      error: { code: 'INVALID_REQUEST', message: `add: the stock would exceed ${MAX_STOCK} units (it is 10)` },
    });
  });

  it.each(['pause', 'close'] as const)('refuses to %s a sale from its end on (ends is exclusive)', (action) => {
    expect(planControl(sale, { action }, sale.endsAt)).toMatchObject({
      kind: 'refused',
      error: { code: 'SALE_ALREADY_ENDED', message: expect.stringContaining('the sale ended at 1970-01-01T00:00:10.000Z') },
    });
    expect(planControl(sale, { action }, sale.endsAt - 1).kind).toBe('change');
  });

  it('refuses stock to an ended sale, but lets an operator lift a pause left on one', () => {
    expect(planControl(sale, { action: 'add_stock', units: 1 }, 20_000)).toMatchObject({
      kind: 'refused',
      error: { code: 'SALE_ALREADY_ENDED' },
    });
    expect(planControl({ ...sale, operatorPaused: true }, { action: 'resume' }, 20_000)).toEqual({
      kind: 'change',
      change: { operatorPaused: false },
    });
  });
});
