import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@flashsale/config';
import { findSale, unitsAcceptedBy, type PrismaClient } from '@flashsale/order-store';
import { readRedisLedger, writeAuditRecord, type ScriptedRedis } from '@flashsale/redis-store';

/** The ledger of one sale at one instant: remaining + in flight + dead-lettered + in MySQL = stock. */
export interface AuditReport {
  saleId: number;
  /** Redis time the Redis side was read at, epoch ms. */
  at: number;
  stock: number;
  remaining: number;
  inFlightUnits: number;
  deadLetteredUnits: number;
  unitsInDb: number;
  /** The sum minus stock: positive means more units are spoken for than exist, negative means units went missing. */
  drift: number;
}

/**
 * Reads one sale's ledger: Redis's side at one instant (readRedisLedger: remaining, the reservations in
 * flight and dead-lettered, of the current generation), then the units MySQL holds of the reservations
 * accepted by then. A reservation acknowledged meanwhile is counted once (in flight, not again in
 * MySQL). Never writes the sale's state.
 */
export async function auditSale(redis: ScriptedRedis, prisma: PrismaClient, prefix: string, saleId: number): Promise<AuditReport | null> {
  const ledger = await readRedisLedger(redis, prefix, saleId);
  if (!ledger) return null;
  const { at, stock, remaining, inFlight, deadLettered } = ledger;
  const unitsInDb = await unitsAcceptedBy(prisma, saleId, at, new Set([...inFlight.keys(), ...deadLettered.keys()]));
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const report = { saleId, at, stock, remaining, inFlightUnits: sum(inFlight), deadLetteredUnits: sum(deadLettered), unitsInDb };
  return { ...report, drift: report.remaining + report.inFlightUnits + report.deadLetteredUnits + report.unitsInDb - report.stock };
}

export interface AuditDeps {
  redis: ScriptedRedis;
  prisma: PrismaClient;
  prefix: string;
  logger: Logger;
  onReport(report: AuditReport & { confirmed: boolean }): void;
}

/**
 * Audits a sale and, if the ledger does not balance, looks again shortly after: a reservation accepted in
 * the very millisecond of the first look can be counted twice once, never twice in a row. Drift seen
 * both times is reported as confirmed. Writes only its report (the audit hash), never the sale's state.
 */
export async function auditAndReport(deps: AuditDeps, saleId: number, recheckMs = 250): Promise<AuditReport | null> {
  if (!(await findSale(deps.prisma, saleId))) return null;
  let report = await auditSale(deps.redis, deps.prisma, deps.prefix, saleId);
  if (!report) return null;
  let confirmed = false;
  if (report.drift !== 0) {
    await sleep(recheckMs);
    const again = await auditSale(deps.redis, deps.prisma, deps.prefix, saleId);
    if (!again) return null;
    confirmed = again.drift !== 0;
    report = again;
  }
  await writeAuditRecord(deps.redis, deps.prefix, saleId, {
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
