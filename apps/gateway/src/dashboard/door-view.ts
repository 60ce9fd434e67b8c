import type { DoorTerms } from '@flashsale/domain';
import type { DoorGauges, Sales } from '@flashsale/sales';
import type { SaleSeriesSource } from './sale-history.ts';

/**
 * A queued sale's door on the dashboard: its figures in the sale's view, and its series in
 * the sale's history. Read without moving the door (readDoorGauges: Redis's clock, one MULTI of reads);
 * an open sale costs one HGET a step.
 */
export interface DoorPanel extends DoorGauges {
  /**
   * Seconds until the last in line is admitted at the door's pace (waiting / rate): a lower bound, as the
   * stock bound may hold the door back; null while the door does not move (closed, or held by the bound).
   */
  etaLastSeconds: number | null;
  admissionTtlSeconds: number;
  noShowFactor: number;
  showUpSeconds: number;
  /**
   * The shadow queue: joins of accounts the door set aside (flagged by the shop, refused solutions again
   * and again, joins past their budget), answered like waiting buyers and never admitted; as this gateway
   * process answered them (each process sets aside what it saw; the metric sums them).
   */
  shadowJoins: { flagged: number; challenge: number; flood: number };
}

/** The door's figures for the sale view, or null for an open sale (or one Redis does not hold now). */
export async function readDoorPanel(
  sales: Pick<Sales, 'doorGauges'>,
  saleId: number,
  admission: DoorTerms | undefined,
  shadowJoins: DoorPanel['shadowJoins'],
): Promise<DoorPanel | null> {
  if (!admission) return null;
  const door = await sales.doorGauges(saleId);
  if (!door) return null;
  const moving = door.open && door.room > 0 && door.admitPerSecond > 0;
  return {
    ...door,
    etaLastSeconds: moving ? Math.ceil(door.waiting / door.admitPerSecond) : null,
    admissionTtlSeconds: admission.admissionTtlSeconds,
    noShowFactor: admission.noShowFactor,
    showUpSeconds: admission.showUpSeconds,
    shadowJoins,
  };
}

/** The history's door series (4 of SaleHistory's extra room): waiting, admitted and unused, the frontier, abandoned turns. */
export function doorSeries(sales: Pick<Sales, 'doorGauges'>): SaleSeriesSource {
  return async (saleId): Promise<Record<string, number | null>> => {
    const door = await sales.doorGauges(saleId);
    return door ? { waiting: door.waiting, admittedUnused: door.unused, front: door.front, abandoned: door.abandoned } : {};
  };
}
