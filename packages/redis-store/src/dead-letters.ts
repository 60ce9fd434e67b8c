import type { ScriptedRedis } from './scripts.ts';
import { saleKeys } from './keys.ts';

/** A reservation the workers set aside instead of writing it as an order. */
export interface DeadLetteredReservation {
  reservationId: string;
  userId: string;
  quantity: number;
  reason: string;
}

/** Dead letters are rare; a status lookup reads at most this many of a sale's. */
const MAX_SCANNED = 10_000;

/** The dead letter of a reservation, if the workers set it aside. */
export async function findDeadLetter(redis: ScriptedRedis, prefix: string, saleId: number, reservationId: string): Promise<DeadLetteredReservation | null> {
  const entries = (await redis.xrange(saleKeys(prefix, saleId).deadLetter, '-', '+', 'COUNT', MAX_SCANNED)) as [string, string[]][];
  for (const [, fields] of entries) {
    const values = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) values.set(fields[i]!, fields[i + 1]!);
    if (values.get('r') === reservationId) {
      return { reservationId, userId: values.get('u') ?? '', quantity: Number(values.get('q')), reason: values.get('reason') ?? '' };
    }
  }
  return null;
}
