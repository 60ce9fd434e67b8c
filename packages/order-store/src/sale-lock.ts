import { createConnection } from 'mariadb';
import { SaleLockBusy } from '@flashsale/domain';
import { poolConfigFromUrl } from './database-url.ts';

/**
 * Runs `work` holding a MySQL named lock for the sale (GET_LOCK on a connection of its own), or fails at
 * once with SaleLockBusy when another process holds it. MySQL frees the lock when that connection
 * closes, so a holder that dies never leaves it taken. The reconciler uses it as the fence BullMQ's job
 * lock is not: a job whose lock lapsed (its Redis connection away too long) is run again elsewhere while
 * the first run may still be going.
 */
export async function withSaleLock<T>(databaseUrl: string, purpose: string, saleId: number, work: () => Promise<T>): Promise<T> {
  const { database, ...server } = poolConfigFromUrl(databaseUrl);
  const name = `flashsale:${database}:${purpose}:${saleId}`;
  const connection = await createConnection({ ...server, database });
  try {
    const [row] = await connection.query<{ got: number | bigint | null }[]>('SELECT GET_LOCK(?, 0) AS got', [name]);
    if (Number(row?.got) !== 1) throw new SaleLockBusy(`${purpose} of sale ${saleId} is already running elsewhere`);
    try {
      return await work();
    } finally {
      await connection.query('SELECT RELEASE_LOCK(?)', [name]).catch(() => undefined);
    }
  } finally {
    await connection.end().catch(() => connection.destroy());
  }
}
