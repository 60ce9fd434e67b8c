import { AppError, serviceUnavailable } from '@flashsale/domain';
import type { CreationKey, NewSale, SaleRecord } from '@flashsale/order-store';
import type { SalesDeps } from './sales-deps.ts';
import { publishCheckpoint } from './state-checkpoint.ts';

/**
 * Creates a sale across the two stores, so that a 201 means it is in MySQL and live in Redis, and any
 * failure leaves no sale that will ever go live. Crash points:
 * 1. MySQL first, as `publishing` (every order a worker writes has its sale row; nothing watches or
 *    sells a publishing sale).
 * 2. Redis, with a deadline on Redis's own clock: a publish stuck in a hung Redis cannot go live after
 *    this request has given up on it.
 * 3. MySQL again: `published`, with a first checkpoint (nothing accepted, in the history of writes of
 *    the Redis server the publish went to, read before it) in the same statement. Only now does the
 *    reconciler watch it, and from its first look on a failover since the publish is a history other
 *    than the checkpoint's: a rebuild. Dying between 2 and 3 leaves the row `publishing`: the reconciler
 *    abandons it, or adopts it if it took buyers, and then, having no checkpoint, its first look records
 *    one (the one window left, for a sale whose creator died mid-create).
 * On a failure the request takes back what it did (Redis, then the row: `abandoned`, its key released).
 * If even that fails, the row stays `publishing` and the reconciler finishes the job after its grace
 * period (settleStalledCreation, below). With the same Idempotency-Key, a retry answers the
 * first create's result instead of making a second sale.
 */
export async function createSale(
  deps: SalesDeps & {
    /** REDIS_COMMAND_TIMEOUT_MS: how long after Redis's now the publish may still go live. */
    publishTimeoutMs: number;
  },
  input: NewSale,
  key: CreationKey | undefined,
  /** False once the request has been answered (its deadline passed): the create must not go on. */
  stillWanted: () => boolean,
): Promise<SaleRecord> {
  const { mysql, logger, publishTimeoutMs } = deps;
  const start = await mysql.beginSaleCreation(input, key);
  if (start.kind === 'existing') {
    if (start.requestHash !== key?.requestHash) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED');
    }
    if (start.publishState === 'published') return start.sale;
    throw serviceUnavailable({ because: 'creation_running' });
  }
  const { sale } = start;
  const inRedis = deps.redis.sale(sale.id);
  const giveUpIfAnswered = () => {
    if (!stillWanted()) throw serviceUnavailable({ because: 'creation_answered' });
  };
  try {
    giveUpIfAnswered();
    // On the clock of the master the publish script will run on (the sale's), which judges the fence,
    // and in its history of writes (replication id), which the sale's first checkpoint records: read
    // before the publish, so a failover at any moment after it is told at the watch's first look.
    const before = await inRedis.snapshot();
    const published = await inRedis.publish(sale, sale.generation, { notAfter: before.at + publishTimeoutMs });
    if (published === 'too_late') throw serviceUnavailable({ because: 'publish_late' });
    giveUpIfAnswered();
    if (!(await mysql.sale(sale.id).markPublished(publishCheckpoint(before)))) throw serviceUnavailable({ because: 'publish_timeout' });
    // Every gateway process that remembers this id as missing (SaleMisses) forgets it now; one that
    // misses the news forgets it within SALE_MISS_TTL_MS anyway, so a lost announcement fails nothing.
    await inRedis
      .announceChanged()
      .catch((error: unknown) =>
        logger.warn({ err: error, saleId: sale.id }, 'the new sale could not be announced; gateways learn of it within SALE_MISS_TTL_MS'),
      );
    return sale;
  } catch (error) {
    await takeBack(sale).catch((failure: unknown) => {
      logger.warn({ err: failure, saleId: sale.id }, 'a failed create could not be taken back now; the reconciler will abandon it');
    });
    throw error;
  }

  async function takeBack(created: SaleRecord): Promise<void> {
    const withdrawn = await inRedis.withdraw(created.generation);
    if (withdrawn === 'withdrawn' || withdrawn === 'absent') await mysql.sale(created.id).abandon();
  }
}

/**
 * Finishes a create whose request died or could not take back what it did (the reconciler's watch calls
 * it once the create has been unfinished for RECONCILER_CREATE_GRACE_MS, MySQL's clock): the row is
 * abandoned and what reached Redis withdrawn, so a sale its operator was told had failed never goes live.
 * Unless it already took reservations (it started at once and buyers came in the moment it was live):
 * those buyers were told yes, so the sale stands, and that is logged. The publish script's deadline keeps
 * a publish still stuck in Redis from arriving after the withdrawal. Redis first, then MySQL: dying in
 * between leaves the row unfinished, and the next look withdraws again (absent) and abandons it.
 */
export async function settleStalledCreation(deps: SalesDeps, sale: { id: number; generation: string }): Promise<void> {
  const withdrawn = await deps.redis.sale(sale.id).withdraw(sale.generation);
  if (withdrawn === 'has_buyers') {
    await deps.mysql.sale(sale.id).adopt();
    deps.logger.error({ saleId: sale.id }, 'an unfinished create took reservations before it could be abandoned: the sale stands');
  } else if (await deps.mysql.sale(sale.id).abandon()) {
    deps.logger.warn({ saleId: sale.id, redis: withdrawn }, 'unfinished sale create abandoned: it will never go live');
  }
}
