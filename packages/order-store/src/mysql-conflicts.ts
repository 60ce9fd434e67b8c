import { isDeadlock } from './mysql-unavailable.ts';

/**
 * The transactions that run again when MySQL rolls them back as a conflict's loser, by name (the label of
 * `flashsale_mysql_conflicts_total`).
 */
export type ConflictOperation = 'order_batch' | 'expiry' | 'payment' | 'cancel';

/**
 * Whether MySQL rolled the transaction back whole because another one won: an InnoDB deadlock's victim,
 * or on Galera a certification conflict (the write-set of a transaction committed on another node first)
 * or a brute-force abort by one being applied ("WSREP detected deadlock/conflict and aborted the
 * transaction"). All are 1213; Prisma names the same P2034. The transaction did nothing, and running it
 * again is the server's own advice.
 */
export function isConflict(error: unknown): boolean {
  if (isDeadlock(error)) return true;
  const e = error as ConflictShapes | null;
  if (!e || typeof e !== 'object') return false;
  // Prisma's adapter reports it in three shapes: a raw statement's (P2010, the server's code in meta), an
  // interactive transaction's rollback (DriverAdapterError, the code in its cause), and its own P2034.
  if (
    e.code === 'P2034' ||
    e.meta?.code === DEADLOCK ||
    e.cause?.originalCode === DEADLOCK ||
    e.cause?.kind === WRITE_CONFLICT ||
    e.meta?.driverAdapterError?.cause?.kind === WRITE_CONFLICT
  )
    return true;
  return typeof e.message === 'string' && /WSREP detected deadlock\/conflict|Deadlock found when trying to get lock/.test(e.message);
}

interface ConflictShapes {
  code?: unknown;
  message?: unknown;
  meta?: { code?: unknown; driverAdapterError?: { cause?: { kind?: unknown } } };
  cause?: { originalCode?: unknown; kind?: unknown };
}

const DEADLOCK = '1213';
const WRITE_CONFLICT = 'TransactionWriteConflict';

const conflicts = new Map<ConflictOperation, number>();

/** Conflicts met so far in this process, by operation: what the metric exports. */
export function mysqlConflictsSoFar(): ReadonlyMap<ConflictOperation, number> {
  return conflicts;
}

/** How many times a transaction runs at most before its conflict reaches the caller (a retry of its own, later). */
export const CONFLICT_ATTEMPTS = 8;

/**
 * Runs `transaction`, and again, up to CONFLICT_ATTEMPTS times, while MySQL refuses it as a conflict's
 * loser; counts each conflict. `transaction` must be whole: one MySQL transaction that re-reads what it
 * decides on, so a run after the winner's commit decides from what the winner wrote (every caller's is:
 * each takes its rows' locks and reads them again inside). Each run after the first waits a few
 * milliseconds, more each time, so two writers that keep meeting drift apart.
 */
export async function retryOnConflict<T>(operation: ConflictOperation, transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await transaction();
    } catch (error) {
      if (!isConflict(error)) throw error;
      conflicts.set(operation, (conflicts.get(operation) ?? 0) + 1);
      if (attempt === CONFLICT_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 50 * attempt));
    }
  }
}
