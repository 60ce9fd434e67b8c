import { AppError } from './error-catalogue.ts';
import { MAX_STOCK } from './sale.ts';

/**
 * An operator's control of a sale (the admin API, the CLI and the dashboard all send these): hold it
 * paused, let it sell again, end it now, or put more units on sale.
 */
export type SaleControl = { action: 'pause' } | { action: 'resume' } | { action: 'close' } | { action: 'add_stock'; units: number };

export type SaleControlAction = SaleControl['action'];

/**
 * What the controls own of a sale: the fields they change, and the version MySQL raises with each change
 * (Redis applies a version only over an older one; see apply-controls-1.lua). Times in epoch ms.
 */
export interface SaleControlState {
  version: number;
  stock: number;
  endsAt: number;
  operatorPaused: boolean;
}

/** The sale a control is judged against, as MySQL holds it under the sale row lock. */
export interface ControlledSale extends SaleControlState {
  startsAt: number;
}

/** A control's verdict: the fields to change (none when it is already so), or why the sale's state forbids it. */
export type ControlPlan =
  | { kind: 'change'; change: Partial<Pick<SaleControlState, 'stock' | 'endsAt' | 'operatorPaused'>> }
  | { kind: 'unchanged' }
  | { kind: 'refused'; error: AppError };

/**
 * Judges a control against the sale's state at `now` (Redis's clock, the one the reserve script judges
 * the window by). Pure. The rules:
 * - an ended sale takes no pause, close or stock (409 SALE_ALREADY_ENDED): nothing can sell any more;
 * - pausing a sale the operator already paused changes nothing and answers the sale (a retry after a
 *   lost answer must not fail);
 * - resuming lifts only the operator's pause: a sale the operator did not pause is refused (409
 *   SALE_NOT_PAUSED), so an operator cannot believe they lifted a reconciliation's pause;
 * - closing sets the end to now (the start is left as it was: an ended sale is ended whatever its start);
 * - stock only grows, by a whole number of units, up to MAX_STOCK in all (400 INVALID_REQUEST past it):
 *   units never go below what was sold.
 */
export function planControl(sale: ControlledSale, control: SaleControl, now: number): ControlPlan {
  const ended = now >= sale.endsAt;
  const endedRefusal = (change: string): ControlPlan => ({
    kind: 'refused',
    error: new AppError('SALE_ALREADY_ENDED', { endedAt: new Date(sale.endsAt).toISOString(), change }),
  });
  switch (control.action) {
    case 'pause':
      if (ended) return endedRefusal('paused');
      return sale.operatorPaused ? { kind: 'unchanged' } : { kind: 'change', change: { operatorPaused: true } };
    case 'resume':
      if (!sale.operatorPaused) return { kind: 'refused', error: new AppError('SALE_NOT_PAUSED') };
      return { kind: 'change', change: { operatorPaused: false } };
    case 'close':
      if (ended) return endedRefusal('closed again');
      return { kind: 'change', change: { endsAt: now } };
    case 'add_stock':
      if (ended) return endedRefusal('given more stock');
      if (sale.stock + control.units > MAX_STOCK) {
        return {
          kind: 'refused',
          error: new AppError('INVALID_REQUEST', { because: 'stock_cap', maxStock: MAX_STOCK, stock: sale.stock }),
        };
      }
      return { kind: 'change', change: { stock: sale.stock + control.units } };
  }
}
