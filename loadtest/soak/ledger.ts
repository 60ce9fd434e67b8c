/**
 * The soak's ledger verdict after the drain (pure). A run of millions of purchases keeps no list of its
 * 202s (wrk reads no answer bodies), so the check is by counts: every unit the reserve script took
 * (stock - remaining) is in an order in MySQL, one order per buyer the script recorded, nothing left in
 * flight or dead-lettered, nothing counted lost, the reconciler's audit at drift 0, and every answer the
 * load generator got a 2xx, with as many buyers recorded as it counted (up to one per connection more:
 * wrk stops counting with requests still in flight).
 */
import type { ClientSummary, LedgerVerdict } from './sample.ts';

/** The admin stats endpoint's answer (GET /api/admin/sales/:id/stats), the fields the verdict reads. */
export interface SaleStats {
  stock: number;
  remaining: number | null;
  inFlight: number;
  ordersInDb: number;
  unitsInDb: number;
  deadLettered: number;
  consistent: boolean;
  lost: { reservations: number; units: number };
  audit: { drift: number; checkedAt: string } | null;
}

export interface LedgerInputs {
  stats: SaleStats;
  /** HLEN of the sale's buyers hash. */
  buyersInRedis: number;
  client: ClientSummary;
  connections: number;
  /** Whether the audit in `stats` read the sale after the drain. */
  auditAfterDrain: boolean;
  drainSeconds: number;
}

export function judgeLedger({ stats, buyersInRedis, client, connections, auditAfterDrain, drainSeconds }: LedgerInputs): LedgerVerdict {
  const takenInRedis = stats.remaining === null ? null : stats.stock - stats.remaining;
  const failures: string[] = [];
  const expect = (holds: boolean, failure: string) => {
    if (!holds) failures.push(failure);
  };
  expect(stats.remaining !== null, "the sale's state is missing from Redis");
  expect(takenInRedis === stats.unitsInDb, `units taken in Redis (${takenInRedis}) differ from units in MySQL (${stats.unitsInDb})`);
  expect(buyersInRedis === stats.ordersInDb, `buyers in Redis (${buyersInRedis}) differ from orders in MySQL (${stats.ordersInDb})`);
  expect(stats.inFlight === 0, `${stats.inFlight} entries still in flight after the drain`);
  expect(stats.deadLettered === 0, `${stats.deadLettered} entries dead-lettered`);
  expect(stats.consistent, 'the stats endpoint says the ledger is not consistent');
  expect(stats.lost.reservations === 0, `${stats.lost.reservations} reservations counted lost`);
  expect(stats.audit !== null, 'no audit of the sale has run');
  expect(stats.audit === null || stats.audit.drift === 0, `audit drift ${stats.audit?.drift}`);
  expect(client.refused === 0, `${client.refused} answers were not 2xx (every purchase is a new buyer: all must be accepted)`);
  expect(client.errors === 0, `${client.errors} transport errors or timeouts`);
  expect(
    buyersInRedis >= client.ok && buyersInRedis <= client.ok + connections,
    `buyers in Redis (${buyersInRedis}) do not match the 2xx the load generator counted (${client.ok}, up to ${connections} more in flight at its end)`,
  );
  return {
    passed: failures.length === 0,
    failures,
    stock: stats.stock,
    remaining: stats.remaining,
    takenInRedis,
    buyersInRedis,
    ordersInDb: stats.ordersInDb,
    unitsInDb: stats.unitsInDb,
    inFlight: stats.inFlight,
    deadLettered: stats.deadLettered,
    consistent: stats.consistent,
    lostReservations: stats.lost.reservations,
    auditDrift: stats.audit?.drift ?? null,
    auditCheckedAt: stats.audit?.checkedAt ?? null,
    auditAfterDrain,
    drainSeconds,
  };
}
