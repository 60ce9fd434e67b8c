import { randomUUID } from 'node:crypto';
import { DOOR_CHALLENGES, doorGuardsOff, type DoorChallenge, type DoorTerms, type RebuyRule, type SaleDefinition } from '@flashsale/domain';
import type { PrismaClient } from './generated/prisma/client.ts';

export interface NewSale {
  name: string;
  stock: number;
  perUserLimit: number;
  startsAt: Date;
  endsAt: Date;
  /** Seconds a winner has to pay (10..86400); MySQL's column default (900) when not given. */
  paymentWindowSeconds?: number;
  /** The waiting room, every setting filled in; absent for an open sale. */
  admission?: DoorTerms;
  /** The rebuy rule; MySQL's column defaults (the built-in rule) when not given. */
  rebuyRule?: RebuyRule;
}

/** The row's columns of a new sale's admission (none for an open sale: MySQL's defaults). */
export function admissionColumns(admission: DoorTerms | undefined) {
  if (!admission) return {};
  return {
    admissionMode: 'queue' as const,
    preQueueSeconds: admission.preQueueSeconds,
    admitPerSecond: admission.admitPerSecond,
    admissionTtlSeconds: admission.admissionTtlSeconds,
    noShowFactor: admission.noShowFactor,
    admissionPaused: admission.paused,
    showUpSeconds: admission.showUpSeconds,
    challenge: admission.challenge,
    challengeMaxNumber: admission.challengeMaxNumber,
    requireClaim: admission.requireClaim,
    maxQueueSize: admission.maxQueueSize,
  };
}

/** The columns of a sale as Prisma gives them, for a new row: the sale's fields, its admission mapped. */
export function newSaleColumns({ admission, rebuyRule, ...sale }: NewSale) {
  return { ...sale, ...admissionColumns(admission), ...rebuyRule };
}

/** Order statuses that hold units of stock (a cancelled or expired order has given them back). */
export const LIVE_ORDER_STATUSES = ['created', 'paid'] as const;

export interface SaleRecord extends SaleDefinition {
  rebuyRule: RebuyRule;
  soldUnits: number;
  /** Generation of the sale's current Redis state (set at publish and at every rebuild). */
  generation: string;
  lostReservations: number;
  lostUnits: number;
  paymentWindowSeconds: number;
  createdAt: number;
  /** Held paused by an operator since (MySQL's clock), or null. */
  operatorPausedAt: number | null;
  operatorPaused: boolean;
  /** Raised by every operator control (see SaleControlState). */
  controlsVersion: number;
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
  paymentWindowSeconds: number;
  createdAt: Date;
  operatorPausedAt: Date | null;
  controlsVersion: number;
  admissionMode: 'open' | 'queue';
  preQueueSeconds: number | null;
  admitPerSecond: number | null;
  admissionTtlSeconds: number | null;
  noShowFactor: number | null;
  admissionPaused: boolean;
  showUpSeconds: number | null;
  challenge: string | null;
  challengeMaxNumber: number | null;
  requireClaim: string | null;
  maxQueueSize: number | null;
  maxOrdersPerBuyer: number;
  rebuyCooldownSeconds: number;
};

const isDoorChallenge = (value: string | null): value is DoorChallenge => (DOOR_CHALLENGES as readonly (string | null)[]).includes(value);

function admissionOf(row: SaleRow): DoorTerms | undefined {
  if (row.admissionMode !== 'queue') return undefined;
  return {
    mode: 'queue',
    preQueueSeconds: row.preQueueSeconds ?? 0,
    admitPerSecond: row.admitPerSecond ?? 1,
    admissionTtlSeconds: row.admissionTtlSeconds ?? 60,
    noShowFactor: row.noShowFactor ?? 1,
    paused: row.admissionPaused,
    // The guards' columns all null: none of them, so the sale keeps a door without guards.
    ...doorGuardsOff(row.admissionTtlSeconds ?? 60),
    ...(row.showUpSeconds !== null && { showUpSeconds: row.showUpSeconds }),
    ...(isDoorChallenge(row.challenge) && { challenge: row.challenge }),
    ...(row.challengeMaxNumber !== null && { challengeMaxNumber: row.challengeMaxNumber }),
    requireClaim: row.requireClaim,
    maxQueueSize: row.maxQueueSize,
  };
}

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
    paymentWindowSeconds: row.paymentWindowSeconds,
    createdAt: row.createdAt.getTime(),
    operatorPausedAt: row.operatorPausedAt?.getTime() ?? null,
    operatorPaused: row.operatorPausedAt !== null,
    controlsVersion: row.controlsVersion,
    ...(row.admissionMode === 'queue' && { admission: admissionOf(row) }),
    rebuyRule: { maxOrdersPerBuyer: row.maxOrdersPerBuyer, rebuyCooldownSeconds: row.rebuyCooldownSeconds },
  };
}

/** Records a new sale with the generation its Redis state will be published under. */
export async function insertSale(prisma: PrismaClient, sale: NewSale): Promise<SaleRecord> {
  return toSaleRecord(await prisma.sale.create({ data: { ...newSaleColumns(sale), redisGeneration: randomUUID() } }));
}

/** A published sale (one whose create is unfinished or abandoned does not exist for anyone but its creator). */
export async function findSale(prisma: PrismaClient, saleId: number): Promise<SaleRecord | null> {
  const row = await prisma.sale.findFirst({ where: { id: saleId, publishState: 'published' } });
  return row ? toSaleRecord(row) : null;
}

/**
 * The operator's change of a queued sale's door (admit rate, door paused): MySQL's record, which publish
 * and every rebuild write into Redis, so it is written before Redis is told (door.ts in packages/sales).
 */
export async function changeAdmission(
  prisma: PrismaClient,
  saleId: number,
  change: { admitPerSecond?: number; paused?: boolean },
): Promise<void> {
  await prisma.sale.update({
    where: { id: saleId },
    data: {
      ...(change.admitPerSecond !== undefined && { admitPerSecond: change.admitPerSecond }),
      ...(change.paused !== undefined && { admissionPaused: change.paused }),
    },
  });
}

/**
 * Published sales not yet ended, each with the milliseconds left until its end, both judged on MySQL's
 * clock (NOW(3)): a caller turns `msLeft` into a deadline on its own monotonic clock, so a process whose
 * wall clock is off never takes an ended sale for live or a live one for ended.
 */
export async function listLiveSales(prisma: PrismaClient): Promise<{ id: number; msLeft: number }[]> {
  const rows = await prisma.$queryRaw<{ id: number; msLeft: number | bigint }[]>`
    SELECT id, TIMESTAMPDIFF(MICROSECOND, NOW(3), ends_at) DIV 1000 AS msLeft
    FROM sales WHERE publish_state = 'published' AND ends_at > NOW(3)`;
  return rows.map((row) => ({ id: Number(row.id), msLeft: Number(row.msLeft) }));
}
