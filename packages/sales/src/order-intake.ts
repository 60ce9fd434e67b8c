import { setTimeout as sleep } from 'node:timers/promises';
import type { DeadLetterReason } from '@flashsale/domain';
import { isLostRefusal, isPermanentWriteError, type BatchOutcome, type LostRefusal } from '@flashsale/order-store';
import { decodeReservation, type ReservationEntry, type StreamEntry } from '@flashsale/redis-store';
import type { SalesDeps } from './sales-deps.ts';

/** An entry of a sale's stream in a worker's hands, with how many times it was delivered. */
export interface StreamDelivery {
  entry: StreamEntry;
  deliveries: number;
}

/** Told of every batch written, entry set aside and failed write (the worker's metrics). */
export interface OrderIntakeObserver {
  batchWritten(outcome: { written: number; replayed: number }, seconds: number): void;
  deadLettered(reason: DeadLetterReason): void;
  /** A write MySQL failed for a passing reason; it is retried. */
  writeFailed(): void;
}

export interface OrderIntakeStats {
  batches: number;
  written: number;
  replayed: number;
  deadLettered: number;
}

/** A written batch, where a reservation may also have been refused because it failed to write alone. */
type WriteOutcome = Omit<BatchOutcome<ReservationEntry>, 'rejected'> & {
  rejected: { reservation: ReservationEntry; reason: DeadLetterReason }[];
};

/** Thrown to abandon a batch when stopping while MySQL is away: its entries stay pending, nothing is lost. */
export class Abandoned extends Error {}

/**
 * The order writers' use case: a batch of one sale's stream entries becomes MySQL orders. Crash points:
 * MySQL first (the batch in one transaction, order-writer.ts), then Redis (XACK of what MySQL holds, then
 * the entries that can never be orders set aside, dead-letter-4.lua; those that are losses are named in
 * MySQL before that). Dying before the commit leaves the entries pending: another worker claims
 * them. Dying after the commit and before the XACK redelivers the batch, and the writer turns the replay
 * into a no-op (an order per reservation id). Dying before an entry is set aside leaves it pending too:
 * it is refused again at its next delivery (and named again, which changes nothing), and set aside then.
 * Delivery is at least once; nothing is written twice.
 */
export class OrderIntake {
  readonly stats: OrderIntakeStats = { batches: 0, written: 0, replayed: 0, deadLettered: 0 };

  constructor(
    private readonly deps: SalesDeps & { observer?: OrderIntakeObserver | undefined },
    private readonly options: {
      /** Deliveries after which an entry goes to the dead-letter stream. */
      maxDeliveries: number;
      /** False once the worker is stopping: a batch MySQL cannot take is then abandoned, not retried. */
      stillRunning: () => boolean;
    },
  ) {}

  /** Writes one sale's batch of entries this worker holds: orders, acknowledged after the commit, or set aside. */
  async take(saleId: number, deliveries: StreamDelivery[]): Promise<void> {
    const { logger } = this.deps;
    const inRedis = this.deps.redis.sale(saleId);
    const reservations: ReservationEntry[] = [];
    const rawById = new Map<string, StreamDelivery>();
    const setAside: { delivery: StreamDelivery; reason: DeadLetterReason }[] = [];
    for (const delivery of deliveries) {
      rawById.set(delivery.entry.id, delivery);
      if (delivery.deliveries > this.options.maxDeliveries) {
        setAside.push({ delivery, reason: 'MAX_DELIVERIES' });
        continue;
      }
      const decoded = decodeReservation(saleId, delivery.entry.id, delivery.entry.fields);
      if (decoded.ok) reservations.push(decoded.reservation);
      else setAside.push({ delivery, reason: decoded.reason });
    }
    if (reservations.length > 0) {
      const started = performance.now();
      const outcome = await this.write(saleId, reservations);
      this.deps.observer?.batchWritten(
        { written: outcome.written.length, replayed: outcome.replayed.length },
        (performance.now() - started) / 1000,
      );
      // Acknowledge only what MySQL now holds; a crash before this line redelivers the batch, and the
      // writer turns the replay into a no-op.
      await inRedis.acknowledge([...outcome.written, ...outcome.replayed].map((r) => r.entryId));
      for (const { reservation, reason } of outcome.rejected) setAside.push({ delivery: rawById.get(reservation.entryId)!, reason });
      // 202s no store will hold (a state a rebuild replaced, or one that held more stock than MySQL:
      // possible only when Redis lost writes or fell behind MySQL). Named and counted lost in MySQL before
      // they are set aside (a crash between redelivers them, and naming one again changes nothing).
      const lost = outcome.rejected.filter((r): r is { reservation: ReservationEntry; reason: LostRefusal } => isLostRefusal(r.reason));
      if (lost.length > 0 && (await this.nameLost(saleId, lost))) {
        logger.error(
          { saleId, reservations: lost.map((r) => [r.reservation.reservationId, r.reason]) },
          'reservations answered 202 that can never be orders: named and counted lost',
        );
      }
      this.stats.batches += 1;
      this.stats.written += outcome.written.length;
      this.stats.replayed += outcome.replayed.length;
      if (outcome.replayed.length > 0)
        logger.info({ saleId, replayed: outcome.replayed.length }, 'redelivered entries were already orders');
    }
    // Set aside last: if the sale's dead letters cannot be written (a key of the wrong type), only these
    // entries stay pending, not the valid ones of the same batch.
    for (const { delivery, reason } of setAside) await this.setAside(saleId, delivery, reason);
  }

  /**
   * Writes a batch, retrying with backoff for as long as it takes while MySQL is away or busy (lost
   * connections, lock waits, deadlocks, timeouts), keeping the entries held meanwhile. Only an error
   * MySQL will repeat for the data itself means an entry is at fault: then the batch is written entry by
   * entry and the one refused alone is set aside as WRITE_FAILED, so one bad entry cannot stall a sale.
   */
  private async write(saleId: number, reservations: ReservationEntry[]): Promise<WriteOutcome> {
    return this.untilMysqlTakes(
      saleId,
      reservations.length,
      'order batch failed',
      () => this.deps.mysql.sale(saleId).writeOrderBatch(reservations),
      (error) => {
        this.deps.logger.error({ err: error, saleId, entries: reservations.length }, 'MySQL refuses an entry of the batch');
        if (reservations.length > 1) return this.writeOneByOne(saleId, reservations);
        return { written: [], replayed: [], rejected: [{ reservation: reservations[0]!, reason: 'WRITE_FAILED' }] };
      },
    );
  }

  /**
   * Names and counts lost the batch's refusals that are losses, retried as the batch write is while
   * MySQL is away or busy: given up, they would come back only at their next delivery, and past
   * WORKER_MAX_DELIVERIES be set aside unnamed. False when MySQL refuses the names themselves (an error
   * it would repeat): they are set aside unnamed then, with an error line, rather than stall the sale.
   */
  private async nameLost(saleId: number, lost: { reservation: ReservationEntry; reason: LostRefusal }[]): Promise<boolean> {
    return this.untilMysqlTakes(
      saleId,
      lost.length,
      'naming lost reservations failed',
      () =>
        this.deps.mysql
          .sale(saleId)
          .recordRefusalsLost(lost)
          .then(() => true),
      (error) => {
        this.deps.logger.error(
          { err: error, saleId, reservations: lost.map((r) => [r.reservation.reservationId, r.reason]) },
          'MySQL refuses to name reservations answered 202 that can never be orders; set aside unnamed',
        );
        return false;
      },
    );
  }

  /**
   * Runs a MySQL write until it succeeds, with backoff, for as long as MySQL is away or busy (lost
   * connections, lock waits, deadlocks, timeouts), the entries held meanwhile; stopping abandons it
   * (they stay pending). An error MySQL would repeat for the data itself goes to `refused` instead.
   */
  private async untilMysqlTakes<T>(
    saleId: number,
    entries: number,
    failure: string,
    write: () => Promise<T>,
    refused: (error: unknown) => T | Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if (isPermanentWriteError(error)) return refused(error);
        this.deps.observer?.writeFailed();
        const mysqlUp = await this.deps.mysql.answers();
        this.deps.logger.error({ err: error, saleId, entries, attempt, mysqlUp }, failure);
        if (!this.options.stillRunning()) throw new Abandoned(`stopping while MySQL cannot take it (${failure})`);
        await sleep(backoffMs(attempt));
      }
    }
  }

  private async writeOneByOne(saleId: number, reservations: ReservationEntry[]): Promise<WriteOutcome> {
    const total: WriteOutcome = { written: [], replayed: [], rejected: [] };
    for (const reservation of reservations) {
      const one = await this.write(saleId, [reservation]);
      total.written.push(...one.written);
      total.replayed.push(...one.replayed);
      total.rejected.push(...one.rejected);
    }
    return total;
  }

  private async setAside(saleId: number, delivery: StreamDelivery, reason: DeadLetterReason): Promise<void> {
    await this.deps.redis.sale(saleId).deadLetter(delivery.entry, reason, delivery.deliveries);
    this.stats.deadLettered += 1;
    this.deps.observer?.deadLettered(reason);
    this.deps.logger.error(
      { saleId, entryId: delivery.entry.id, reason, deliveries: delivery.deliveries },
      'entry moved to the dead-letter stream',
    );
  }
}

/** 100 ms doubling to 5 s: quick to recover from a blip, gentle on a database that is down. */
export function backoffMs(attempt: number): number {
  return Math.min(100 * 2 ** (attempt - 1), 5000);
}
