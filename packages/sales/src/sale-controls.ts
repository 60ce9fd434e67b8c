import { AppError, planControl, type SaleControl } from '@flashsale/domain';
import { controlStateOf, type SaleRecord } from '@flashsale/order-store';
import { adminSaleView, type AdminSaleView } from './admin-sale-view.ts';
import type { SalesDeps } from './sales-deps.ts';

/** Who sent a control, for the audit log: the admin API, the dashboard (its session) or the CLI. */
export type ControlActor = 'api' | 'dashboard' | 'cli';

/**
 * Runs an operator's control of a sale: the one path of the admin API, the dashboard and `npm run admin`.
 * Crash points:
 *
 * 1. MySQL first, under the sale row lock: judge the control against the sale (planControl), write the
 *    change and raise the controls version (controlSaleInMysql). MySQL is the record a rebuild restores
 *    Redis from, so a control must be there before Redis acts on it.
 * 2. Then Redis, one script keyed by the sale (apply-controls-1.lua): MySQL's controls at that version,
 *    applied only over an older one.
 * 3. Announce the change, so no gateway answers from a cached verdict (a sold-out sale given stock).
 *
 * A crash between 1 and 2 leaves MySQL ahead of Redis (a pause recorded, the sale still selling). Three
 * things bring Redis level, each idempotent because the script writes a version, never a change: step 2
 * runs on every control of the sale, refused or not, so the operator's retry completes it (a pause
 * repeated answers 200, not 409, for that reason); the reconciler's watch finds Redis's version behind
 * MySQL's and applies MySQL's; and a rebuild writes MySQL's controls and applies them again before it
 * resumes. A crash before 1 commits changed nothing.
 */
export async function runSaleControl(
  deps: SalesDeps,
  saleId: number,
  control: SaleControl,
  actor: ControlActor,
  /** The client's address as TRUST_PROXY tells it (an HTTP control), for the audit line. */
  address?: string,
): Promise<AdminSaleView> {
  const { mysql, logger } = deps;
  const inRedis = deps.redis.sale(saleId);
  // The sale's clock: a close ends it at the instant the reserve script will judge by.
  const now = await inRedis.now();
  const outcome = await mysql.sale(saleId).control(now, (sale) => planControl(sale, control, now));
  if (outcome.kind === 'not_found') throw new AppError('SALE_NOT_FOUND', { saleId });
  const redisOutcome = await inRedis.applyControls(controlStateOf(outcome.sale));
  if (redisOutcome === 'applied') await inRedis.announceChanged();

  const audit = {
    audit: 'sale_control',
    actor,
    ...(address !== undefined && { address }),
    saleId,
    ...control,
    outcome: outcome.kind,
    redis: redisOutcome,
    ...(outcome.kind === 'changed' && { before: controlled(outcome.before), after: controlled(outcome.sale) }),
    ...(outcome.kind === 'refused' && { code: outcome.error.code }),
  };
  if (redisOutcome === 'refused')
    logger.error(audit, 'sale control: Redis holds more stock than MySQL; the reconciler rebuilds it from MySQL');
  else logger.info(audit, `sale control: ${control.action} ${outcome.kind}`);

  if (outcome.kind === 'refused') throw outcome.error;
  return adminSaleView(outcome.sale, await inRedis.state(), now);
}

/** What the audit log keeps of a sale before and after a control. */
function controlled(sale: SaleRecord) {
  return {
    stock: sale.stock,
    endsAt: new Date(sale.endsAt).toISOString(),
    operatorPaused: sale.operatorPaused,
    version: sale.controlsVersion,
  };
}

/**
 * Brings Redis level with MySQL when an operator's control committed in MySQL never reached Redis (its
 * process died between the two writes; the reconciler's watch finds Redis's version behind): written now
 * from MySQL's record. Versioned, so a control applied since is not undone.
 */
export async function catchUpControls(deps: SalesDeps, sale: SaleRecord, redisVersion: number): Promise<void> {
  const applied = await deps.redis.sale(sale.id).applyControls(controlStateOf(sale));
  deps.logger.warn(
    { saleId: sale.id, version: sale.controlsVersion, was: redisVersion, applied },
    "operator's controls brought into Redis from MySQL",
  );
}
