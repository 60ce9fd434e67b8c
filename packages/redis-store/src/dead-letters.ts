import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';

/** A reservation the workers set aside instead of writing it as an order. */
export interface DeadLetteredReservation {
  reservationId: string;
  userId: string;
  quantity: number;
  reason: string;
}

/**
 * The rejection of a reservation, if the workers set it aside: one HGET of the sale's rejected hash,
 * which dead-letter-3.lua writes together with the dead-letter entry. A status lookup costs the same
 * whether a sale has no dead letters or a million.
 */
export async function findDeadLetter(redis: ScriptedRedis, prefix: string, saleId: number, reservationId: string): Promise<DeadLetteredReservation | null> {
  const record = await redis.hget(saleKeys(prefix, saleId).rejected, reservationId);
  if (record === null) return null;
  const { u, q, reason } = JSON.parse(record) as { u?: string; q?: string | number; reason?: string };
  return { reservationId, userId: u ?? '', quantity: Number(q), reason: reason ?? '' };
}
