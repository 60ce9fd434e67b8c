import type { AppError, ControlPlan, ControlledSale, SaleControlState } from '@flashsale/domain';
import type { PrismaClient } from './generated/prisma/client.ts';
import { toSaleRecord, type SaleRecord } from './sale-repository.ts';

/** What a control did to MySQL's record of the sale. */
export type MysqlControlOutcome =
  | { kind: 'not_found' }
  | { kind: 'refused'; error: AppError; sale: SaleRecord }
  | { kind: 'unchanged'; sale: SaleRecord }
  | { kind: 'changed'; sale: SaleRecord; before: SaleRecord };

/** The fields the operator's controls own, as Redis takes them (apply-controls-1.lua). */
export function controlStateOf(sale: SaleRecord): SaleControlState {
  return { version: sale.controlsVersion, stock: sale.stock, endsAt: sale.endsAt, operatorPaused: sale.operatorPaused };
}

/**
 * The MySQL half of an operator's control: under the sale row lock (the lock every order batch and every
 * rebuild takes, so the judgement and the change see no batch or rebuild half done), reads the published
 * sale, asks `plan` what to change, and writes it with the controls version raised by one. The caller
 * then writes the new state into Redis (applySaleControls). `now` is the control's instant on Redis's
 * clock: the end a close sets, and when an operator's pause began.
 */
export async function controlSaleInMysql(
  prisma: PrismaClient,
  saleId: number,
  now: number,
  plan: (sale: ControlledSale) => ControlPlan,
): Promise<MysqlControlOutcome> {
  return prisma.$transaction(
    async (tx) => {
      const [locked] = await tx.$queryRaw<
        { id: number }[]
      >`SELECT id FROM sales WHERE id = ${saleId} AND publish_state = 'published' FOR UPDATE`;
      if (!locked) return { kind: 'not_found' };
      const before = toSaleRecord(await tx.sale.findUniqueOrThrow({ where: { id: saleId } }));
      const verdict = plan({ ...controlStateOf(before), startsAt: before.startsAt });
      if (verdict.kind === 'refused') return { kind: 'refused', error: verdict.error, sale: before };
      if (verdict.kind === 'unchanged') return { kind: 'unchanged', sale: before };
      const { stock, endsAt, operatorPaused } = verdict.change;
      const updated = await tx.sale.update({
        where: { id: saleId },
        data: {
          ...(stock !== undefined && { stock }),
          ...(endsAt !== undefined && { endsAt: new Date(endsAt) }),
          ...(operatorPaused !== undefined && { operatorPausedAt: operatorPaused ? new Date(now) : null }),
          controlsVersion: { increment: 1 },
        },
      });
      return { kind: 'changed', sale: toSaleRecord(updated), before };
    },
    { maxWait: 5_000, timeout: 10_000 },
  );
}
