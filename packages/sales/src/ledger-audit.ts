import { setTimeout as sleep } from 'node:timers/promises';
import type { SalesDeps } from './sales-deps.ts';

/**
 * The ledger of one sale at one instant: remaining - returned + in flight + dead-lettered + in MySQL =
 * stock, where returned is what closed orders gave back to this Redis state and "in MySQL" counts the
 * live orders and the orders closed in this state (whether or not their units are back yet).
 */
export interface AuditReport {
  saleId: number;
  /** Redis time the Redis side was read at, epoch ms. */
  at: number;
  stock: number;
  remaining: number;
  /** Units closed orders gave back to this Redis state (also counted in remaining). */
  returnedUnits: number;
  inFlightUnits: number;
  deadLetteredUnits: number;
  unitsInDb: number;
  /** The sum minus stock: positive means more units are spoken for than exist, negative means units went missing. */
  drift: number;
}

/**
 * Reads one sale's ledger: Redis's side at one instant (readRedisLedger: remaining, the reservations in
 * flight and the units dead-lettered, of the current generation), then the units MySQL holds of the
 * reservations accepted by then. A reservation acknowledged meanwhile is counted once (in flight, not
 * again in MySQL). What this costs Redis follows what is in flight, not the stream's length nor the
 * number of dead letters, as long as the ledger balances. When it does not, it is counted again from the
 * dead letters themselves (read in pages): a reservation set aside that is an order as well (a worker
 * committed it and died before XACK, and its entry was then set aside for its deliveries) counts once,
 * as set aside, not again in MySQL; the kept count cannot tell which those are. Never writes the sale's
 * state.
 */
export async function auditSale({ redis, mysql }: Pick<SalesDeps, 'redis' | 'mysql'>, saleId: number): Promise<AuditReport | null> {
  const inRedis = redis.sale(saleId);
  const ledger = await inRedis.ledger();
  if (!ledger) return null;
  const { at, stock, remaining, inFlight, generation, returnedUnits } = ledger;
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const inFlightUnits = sum(inFlight);
  const reportOf = (deadLetteredUnits: number, unitsInDb: number): AuditReport => ({
    saleId,
    at,
    stock,
    remaining,
    returnedUnits,
    inFlightUnits,
    deadLetteredUnits,
    unitsInDb,
    drift: remaining - returnedUnits + inFlightUnits + deadLetteredUnits + unitsInDb - stock,
  });
  const counted = reportOf(ledger.deadLetteredUnits, await mysql.sale(saleId).unitsAcceptedBy(at, new Set(inFlight.keys()), generation));
  if (counted.drift === 0) return counted;
  const deadLettered = await inRedis.deadLettered({ generation: ledger.generation, upTo: ledger.lastDeadLetterId });
  return reportOf(
    sum(deadLettered),
    await mysql.sale(saleId).unitsAcceptedBy(at, new Set([...inFlight.keys(), ...deadLettered.keys()]), generation),
  );
}

export interface AuditDeps extends SalesDeps {
  onReport(report: AuditReport & { confirmed: boolean }): void;
}

/**
 * Audits a sale and, if the ledger does not balance, looks again shortly after: a reservation accepted in
 * the very millisecond of the first look can be counted twice once, never twice in a row. Drift seen
 * both times is reported as confirmed. Writes only its report (the audit hash), never the sale's state.
 */
export async function auditAndReport(deps: AuditDeps, saleId: number, recheckMs = 250): Promise<AuditReport | null> {
  if (!(await deps.mysql.sale(saleId).find())) return null;
  let report = await auditSale(deps, saleId);
  if (!report) return null;
  let confirmed = false;
  if (report.drift !== 0) {
    await sleep(recheckMs);
    const again = await auditSale(deps, saleId);
    if (!again) return null;
    confirmed = again.drift !== 0;
    report = again;
  }
  await deps.redis.sale(saleId).writeAuditRecord({
    drift: confirmed ? report.drift : 0,
    checkedAt: report.at,
    remaining: report.remaining,
    inFlightUnits: report.inFlightUnits,
    deadLetteredUnits: report.deadLetteredUnits,
    unitsInDb: report.unitsInDb,
  });
  if (confirmed) deps.logger.error({ ...report }, 'audit: the ledger of the sale does not balance');
  deps.onReport({ ...report, confirmed });
  return report;
}
