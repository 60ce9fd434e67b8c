import { randomUUID } from 'node:crypto';
import type { SaleDefinition } from '@flashsale/domain';
import type { PrismaClient } from './generated/prisma/client.ts';

export interface NewSale {
  name: string;
  stock: number;
  perUserLimit: number;
  startsAt: Date;
  endsAt: Date;
}

/** Order statuses that hold units of stock (a cancelled or expired order has given them back). */
export const LIVE_ORDER_STATUSES = ['created', 'paid'] as const;

export interface SaleRecord extends SaleDefinition {
  soldUnits: number;
  /** Generation of the sale's current Redis state (set at publish and at every rebuild). */
  generation: string;
  lostReservations: number;
  lostUnits: number;
  createdAt: number;
}

type SaleRow = {
  id: number;
  name: string;
  stock: number;
  perUserLimit: number;
  startsAt: Date;
  endsAt: Date;
  soldUnits: number;
  redisGeneration: string | null;
  lostReservations: number;
  lostUnits: number;
  createdAt: Date;
};

export function toSaleRecord(row: SaleRow): SaleRecord {
  return {
    id: row.id,
    name: row.name,
    stock: row.stock,
    perUserLimit: row.perUserLimit,
    startsAt: row.startsAt.getTime(),
    endsAt: row.endsAt.getTime(),
    soldUnits: row.soldUnits,
    generation: row.redisGeneration ?? '',
    lostReservations: row.lostReservations,
    lostUnits: row.lostUnits,
    createdAt: row.createdAt.getTime(),
  };
}

/** Records a new sale with the generation its Redis state will be published under. */
export async function insertSale(prisma: PrismaClient, sale: NewSale): Promise<SaleRecord> {
  return toSaleRecord(await prisma.sale.create({ data: { ...sale, redisGeneration: randomUUID() } }));
}

/** A published sale (one whose create is unfinished or abandoned does not exist for anyone but its creator). */
export async function findSale(prisma: PrismaClient, saleId: number): Promise<SaleRecord | null> {
  const row = await prisma.sale.findFirst({ where: { id: saleId, publishState: 'published' } });
  return row ? toSaleRecord(row) : null;
}

/** Live orders of a sale and the units they hold, as MySQL records them. */
export async function saleOrderTotals(prisma: PrismaClient, saleId: number): Promise<{ orders: number; units: number }> {
  const totals = await prisma.order.aggregate({
    where: { saleId, status: { in: [...LIVE_ORDER_STATUSES] } },
    _count: { _all: true },
    _sum: { quantity: true },
  });
  return { orders: totals._count._all, units: totals._sum.quantity ?? 0 };
}
