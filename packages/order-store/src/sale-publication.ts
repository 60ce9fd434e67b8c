import { randomUUID } from 'node:crypto';
import type { PrismaClient } from './generated/prisma/client.ts';
import { checkpointColumns, type Checkpoint } from './sale-ledger.ts';
import { newSaleColumns, toSaleRecord, type NewSale, type SaleRecord } from './sale-repository.ts';

/**
 * MySQL's side of creating a sale, which spans two stores: the row is inserted `publishing`, the sale is
 * made live in Redis, and only then is the row `published`. A create that fails in between is
 * `abandoned` (by the request itself, or by the reconciler once it has waited long enough), so no sale
 * an operator was told had failed ever goes live later, and an Idempotency-Key retry never makes two.
 */

export interface CreationKey {
  idempotencyKey: string;
  /** SHA-256 of the request the key came with. */
  requestHash: string;
}

export type PublishState = 'publishing' | 'published' | 'abandoned';

export type CreationStart =
  { kind: 'started'; sale: SaleRecord } | { kind: 'existing'; sale: SaleRecord; publishState: PublishState; requestHash: string | null };

const isKeyConflict = (error: unknown): boolean => {
  const e = error as {
    code?: string;
    meta?: { target?: unknown; driverAdapterError?: { cause?: { constraint?: unknown } } };
    message?: string;
  };
  return e.code === 'P2002' && JSON.stringify(e.meta ?? {}).includes('idempotency_key');
};

/**
 * Inserts a sale as `publishing`. With a key already used by a create that was not abandoned, inserts
 * nothing and returns that create instead.
 */
export async function beginSaleCreation(prisma: PrismaClient, sale: NewSale, key?: CreationKey): Promise<CreationStart> {
  try {
    const row = await prisma.sale.create({
      data: { ...newSaleColumns(sale), redisGeneration: randomUUID(), publishState: 'publishing', ...key },
    });
    return { kind: 'started', sale: toSaleRecord(row) };
  } catch (error) {
    if (!key || !isKeyConflict(error)) throw error;
    const row = await prisma.sale.findUnique({ where: { idempotencyKey: key.idempotencyKey } });
    // Abandoned between the insert and this read: its key is free again.
    if (!row) return beginSaleCreation(prisma, sale, key);
    return { kind: 'existing', sale: toSaleRecord(row), publishState: row.publishState, requestHash: row.requestHash };
  }
}

/**
 * The sale is live in Redis: publishing -> published, with its first checkpoint (see createSale) in the
 * same statement, so no published sale is ever watched without one from its creator. False when it was
 * abandoned meanwhile.
 */
export async function markPublished(prisma: PrismaClient, saleId: number, checkpoint: Checkpoint): Promise<boolean> {
  const { count } = await prisma.sale.updateMany({
    where: { id: saleId, publishState: 'publishing' },
    data: { publishState: 'published', ...checkpointColumns(checkpoint) },
  });
  return count === 1;
}

/**
 * A sale that took buyers must stand, whatever its create's fate was: abandoned or publishing ->
 * published. Only for a sale whose Redis state holds reservations (see the reconciler).
 */
export async function adoptSale(prisma: PrismaClient, saleId: number): Promise<void> {
  await prisma.sale.updateMany({ where: { id: saleId, publishState: { not: 'published' } }, data: { publishState: 'published' } });
}

/** The create failed: publishing -> abandoned, its key released for a retry. False when it was published meanwhile. */
export async function abandonSale(prisma: PrismaClient, saleId: number): Promise<boolean> {
  const { count } = await prisma.sale.updateMany({
    where: { id: saleId, publishState: 'publishing' },
    data: { publishState: 'abandoned', idempotencyKey: null },
  });
  return count === 1;
}

/**
 * Creates still `publishing` `graceMs` after their insert, on MySQL's clock (the row's created_at is
 * MySQL's too): the request that inserted them died or failed to finish them.
 */
export async function listStalledCreations(prisma: PrismaClient, graceMs: number): Promise<SaleRecord[]> {
  const ids = await prisma.$queryRaw<{ id: number }[]>`
    SELECT id FROM sales WHERE publish_state = 'publishing' AND created_at < NOW(3) - INTERVAL ${graceMs * 1000} MICROSECOND`;
  if (ids.length === 0) return [];
  const rows = await prisma.sale.findMany({ where: { id: { in: ids.map((row) => Number(row.id)) }, publishState: 'publishing' } });
  return rows.map(toSaleRecord);
}
