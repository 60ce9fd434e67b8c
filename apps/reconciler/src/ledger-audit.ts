import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@flashsale/config';
import { findSale, unitsAcceptedBy, type PrismaClient } from '@flashsale/order-store';
import { decodeReservation, ORDER_WRITERS_GROUP, saleKeys, toRecord, type ScriptedRedis } from '@flashsale/redis-store';

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

type Entry = [id: string, fields: string[]];

/**
 * Reads one sale's ledger. The Redis side is taken in one MULTI (remaining, generation, the group's
 * position, the stream's last id, the dead letters); the entries in flight are then read by id up to that
 * last id, so the check counts exactly the reservations accepted by the time of the MULTI. A reservation
 * acknowledged meanwhile is counted once (in flight, not again in MySQL). Only entries of the current
 * generation count: others were never taken from this state's stock. Never writes the sale's state.
 */
export async function auditSale(redis: ScriptedRedis, prisma: PrismaClient, prefix: string, saleId: number): Promise<AuditReport | null> {
  const keys = saleKeys(prefix, saleId);
  const replies = await redis
    .multi()
    .time()
    .hmget(keys.meta, 'stock', 'remaining', 'gen', 'paused')
    .xrevrange(keys.stream, '+', '-', 'COUNT', 1)
    .xinfo('GROUPS', keys.stream)
    .xrange(keys.deadLetter, '-', '+')
    .exec();
  if (!replies) return null;
  const [time, meta, last, groups, dead] = replies;
  // A missing stream fails XINFO: the state is lost, which is the watcher's business, not the audit's.
  if (time![0] || meta![0] || last![0] || groups![0] || dead![0]) return null;
  const [seconds, micros] = time![1] as [string, string];
  const at = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const [stock, remaining, generation, paused] = meta![1] as (string | null)[];
  if (stock === null || paused === '1') return null;
  const lastId = ((last![1] as Entry[])[0] ?? ['0-0'])[0];
  const group = (groups![1] as unknown[][]).map(toRecord).find((g) => g.name === ORDER_WRITERS_GROUP);
  if (!group) return null;

  const inFlight = new Map<string, number>();
  const count = (entry: Entry, into: Map<string, number>) => {
    const decoded = decodeReservation(saleId, entry[0], entry[1]);
    if (decoded.ok && decoded.reservation.generation === generation) into.set(decoded.reservation.reservationId, decoded.reservation.quantity);
  };
  for (const entry of await readRange(redis, keys.stream, `(${String(group['last-delivered-id'])}`, lastId)) count(entry, inFlight);
  const pending = (await redis.xpending(keys.stream, ORDER_WRITERS_GROUP, '-', lastId, 100_000)) as [string, ...unknown[]][];
  if (pending.length > 0) {
    const pipeline = redis.pipeline();
    for (const [id] of pending) pipeline.xrange(keys.stream, id, id);
    for (const [, reply] of (await pipeline.exec()) ?? []) for (const entry of (reply as Entry[] | null) ?? []) count(entry, inFlight);
  }
  const deadLettered = new Map<string, number>();
  for (const entry of dead![1] as Entry[]) count(entry, deadLettered);

  const unitsInDb = await unitsAcceptedBy(prisma, saleId, at, new Set([...inFlight.keys(), ...deadLettered.keys()]));
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const report = { saleId, at, stock: Number(stock), remaining: Number(remaining), inFlightUnits: sum(inFlight), deadLetteredUnits: sum(deadLettered), unitsInDb };
  return { ...report, drift: report.remaining + report.inFlightUnits + report.deadLetteredUnits + report.unitsInDb - report.stock };
}

async function readRange(redis: ScriptedRedis, key: string, from: string, to: string): Promise<Entry[]> {
  if (to === '0-0') return [];
  const entries: Entry[] = [];
  let start = from;
  for (;;) {
    const chunk = (await redis.xrange(key, start, to, 'COUNT', 1000)) as Entry[];
    entries.push(...chunk);
    if (chunk.length < 1000) return entries;
    start = `(${chunk[chunk.length - 1]![0]}`;
  }
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
  const keys = saleKeys(deps.prefix, saleId);
  await deps.redis.hset(keys.audit, {
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
