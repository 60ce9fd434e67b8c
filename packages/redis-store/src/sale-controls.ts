import type { SaleControlState } from '@flashsale/domain';
import type { SaleRef } from './store-ref.ts';

/** What apply-controls-1.lua did: see its header. */
export type ControlsApplied = 'applied' | 'already_applied' | 'absent' | 'refused';

const OUTCOMES: Record<number, ControlsApplied> = { 1: 'applied', 0: 'already_applied', [-1]: 'absent', [-2]: 'refused' };

/**
 * Writes the operator's controls of a sale, as MySQL holds them now, into its Redis state: stock (and
 * remaining raised by the units added), end, operator's pause, at MySQL's controls version. Idempotent and
 * never backwards (an older version changes nothing), so any process holding MySQL's row may call it: the
 * control that changed the row, a retry of it, the reconciler after a rebuild or on finding Redis behind.
 */
export async function applySaleControls({ redis, keys }: SaleRef, controls: SaleControlState): Promise<ControlsApplied> {
  const reply = await redis.applyControls(
    keys.meta,
    controls.version,
    controls.stock,
    controls.endsAt,
    controls.operatorPaused ? '1' : '0',
  );
  const outcome = OUTCOMES[reply];
  if (!outcome) throw new Error(`apply-controls-1.lua answered ${String(reply)}`);
  return outcome;
}
