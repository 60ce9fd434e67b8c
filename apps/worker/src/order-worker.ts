import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@flashsale/runtime';
import {
  Abandoned,
  backoffMs,
  type OrderIntake,
  type OrderIntakeObserver,
  type OrderIntakeStats,
  type Sales,
  type StreamDelivery,
} from '@flashsale/sales';
import { SaleBackoff, type SaleFaultKind, type SaleStage } from './sale-backoff.ts';
import { SaleLanes } from './sale-lanes.ts';
import { SaleSchedule } from './sale-schedule.ts';

export interface OrderWorkerOptions {
  /** Entries per sale per MySQL transaction, default 500. */
  batchSize: number;
  /** Pause between polls when no stream had anything, default 5 ms. */
  idleMs: number;
  /** A sale whose read gave fewer entries than a batch is read again no sooner than this, default 20 ms (WORKER_BATCH_WAIT_MS; see SaleSchedule). */
  batchWaitMs?: number;
  /** Entries held this long by another consumer are taken over, default 15000 ms. */
  claimIdleMs: number;
  /** Deliveries after which an entry goes to the dead-letter stream, default 5. */
  maxDeliveries: number;
  /** How often the list of sales is read again, default 1000 ms. */
  salesRefreshMs: number;
  /** Batches of one sale being written at once, default 2 (see run()). */
  writesInFlight: number;
  /** Every listed sale is read at least this often without a signal, default 250 ms (WORKER_SWEEP_MS; see SaleSchedule). */
  sweepMs?: number;
  /** The most sales swept per second, default 1000 (WORKER_SWEEP_PER_SECOND). */
  sweepPerSecond?: number;
}

/** How long a sale stays hot (read every round) after a signal or a read that gave entries. */
const HOT_MS = 2000;
/** Most sales one round sweeps: bounds one pipeline. */
const SWEEP_BURST = 1000;

export interface OrderWorkerDeps {
  /** The use cases (packages/sales): the stream's reads, and each sale's batch written (OrderIntake). */
  sales: Sales;
  logger: Logger;
  /** Told of every batch written, entry set aside, failed write and failing sale (the worker's metrics). */
  observer?: OrderWorkerObserver;
}

export interface OrderWorkerObserver extends OrderIntakeObserver {
  /** A step failed for one sale's own keys: that sale is skipped for a while, the others go on. */
  saleFailed(saleId: number, stage: SaleStage, kind: SaleFaultKind): void;
  /** A whole round failed (Redis or MySQL away, most often); it is retried with backoff. */
  roundFailed(error: unknown): void;
}

export type OrderWorkerStats = OrderIntakeStats;

type Delivery = StreamDelivery;

/**
 * Turns reservations on the sale streams into MySQL orders: reads new entries of every sale, writes each
 * sale's batch in one transaction, acknowledges only after the commit, and takes over entries that a
 * dead worker left pending. Delivery is at least once; the order writer makes a replay a no-op.
 */
export class OrderWorker {
  readonly consumer = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  /** Writes each batch this worker holds (packages/sales/src/order-intake.ts). */
  private readonly intake: OrderIntake;
  readonly stats: OrderWorkerStats;
  private running = false;
  private loop: Promise<void> | undefined;
  /**
   * Entries this consumer holds (read, being written, not yet acknowledged or set aside), by sale, with
   * how many of its tasks hold each: the same entry may be in hand twice (read, and reclaimed by this
   * worker after a keep-alive failed), and stays kept alive until both are done with it.
   */
  private readonly held = new Map<number, Map<string, number>>();
  private readonly lanes: SaleLanes;
  private readonly backoff: SaleBackoff;
  private readonly schedule: SaleSchedule;
  /** The first error of a batch that failed for a reason not its sale's own, for the loop to back off on. */
  private batchFailure: { error: unknown } | undefined;

  constructor(
    private readonly deps: OrderWorkerDeps,
    private readonly options: OrderWorkerOptions,
  ) {
    this.lanes = new SaleLanes(options.writesInFlight);
    this.schedule = new SaleSchedule({
      sweepMs: options.sweepMs ?? 250,
      sweepPerSecond: options.sweepPerSecond ?? 1000,
      hotMs: HOT_MS,
      claimEveryMs: Math.max(100, options.claimIdleMs / 4),
      // A worker that dies holding a sale's last batch leaves it idle for the claim timeout: the other
      // workers keep claiming on that sale at the quick pace that long after it was last active.
      activeForClaimsMs: 2 * options.claimIdleMs + HOT_MS,
      coldClaimEveryMs: Math.max(100, options.claimIdleMs),
      burst: SWEEP_BURST,
    });
    this.backoff = new SaleBackoff(deps.logger, (saleId, stage, kind) => deps.observer?.saleFailed(saleId, stage, kind));
    this.intake = deps.sales.orderIntake(deps.observer, { maxDeliveries: options.maxDeliveries, stillRunning: () => this.running });
    this.stats = this.intake.stats;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // Everything in hand is touched well within the claim timeout, so that no other worker mistakes this
    // one for dead, however long a write takes (retries while MySQL is away) or entries wait their turn.
    const keepAlive = setInterval(() => void this.keepHeldAlive(), Math.max(50, this.options.claimIdleMs / 3));
    this.loop = this.run().finally(() => clearInterval(keepAlive));
  }

  /** Finishes the batches in hand (written and acknowledged), then resolves. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** A gateway signalled new reservations on the sale (listenForWork): it is read from the next round on. */
  signal(saleId: number): void {
    this.schedule.signal(saleId, performance.now());
  }

  /** Signals may have been missed (the subscription was down): every sale is read once, now. */
  sweepAll(): void {
    this.schedule.sweepAll();
  }

  /** Entries this worker holds: read and not yet acknowledged or set aside. */
  heldEntries(): number {
    let count = 0;
    for (const ids of this.held.values()) count += ids.size;
    return count;
  }

  /** Sales skipped for now because their own keys refuse the worker (see SaleBackoff). */
  salesBackedOff(): number {
    return this.backoff.count();
  }

  private async keepHeldAlive(): Promise<void> {
    for (const [saleId, ids] of this.held) {
      await this.deps.sales.keepHeld(this.consumer, saleId, [...ids.keys()]).catch(() => undefined);
    }
  }

  private hold(saleId: number, ids: string[]): void {
    let holds = this.held.get(saleId);
    if (!holds) this.held.set(saleId, (holds = new Map<string, number>()));
    for (const id of ids) holds.set(id, (holds.get(id) ?? 0) + 1);
  }

  private release(saleId: number, ids: string[]): void {
    const holds = this.held.get(saleId);
    if (!holds) return;
    for (const id of ids) {
      const count = holds.get(id) ?? 0;
      if (count <= 1) holds.delete(id);
      else holds.set(id, count - 1);
    }
    if (holds.size === 0) this.held.delete(saleId);
  }

  /**
   * The loop. Each sale has a lane of its own (SaleLanes): up to `writesInFlight` of its batches being
   * written at once, and while its lane is full it is not read; the loop reads the other sales
   * meanwhile. So reading the next batch from Redis overlaps writing the last ones to MySQL, and a sale
   * whose writes are slow or retried for a long time (its row locked by someone, say) holds up no other
   * sale. Two batches of one sale still commit one
   * after the other (the sale row's lock orders them), but the second is already at MySQL, waiting on
   * the lock, when the first commits: MySQL stays busy while this process prepares and acknowledges
   * batches, rather than each waiting for the other. Which of the two commits first is not fixed; it
   * matters only when Redis accepted more than MySQL allows (after a data loss), where the refusal
   * (OVER_STOCK, DUPLICATE_BUYER) may fall on the earlier reservation rather than the later, as it may
   * with several workers anyway.
   *
   * A sale whose own keys refuse a step (SaleBackoff) is skipped for a while; a failure that is not one
   * sale's (Redis or MySQL away) fails the round and the loop retries with backoff, entries kept pending.
   */
  private async run(): Promise<void> {
    const { logger } = this.deps;
    let sales: number[] = [];
    let salesReadAt = -Infinity;
    let failures = 0;
    while (this.running) {
      try {
        if (this.batchFailure) {
          const { error } = this.batchFailure;
          this.batchFailure = undefined;
          throw error;
        }
        let now = performance.now();
        // A signal for a sale not on the list means one was published since: read the list again, but
        // not more than every 100 ms, whoever signals.
        if (now - salesReadAt >= this.options.salesRefreshMs || (this.schedule.wantsSales() && now - salesReadAt >= 100)) {
          sales = await this.deps.sales.listSaleIds();
          this.backoff.keepOnly(sales);
          this.schedule.setSales(sales, performance.now());
          salesReadAt = now = performance.now();
        }
        const round = this.schedule.round(now);
        let busy = false;
        // New entries first, then what dead consumers left: a sale whose read fails is backed off
        // before its claim, so each of its steps' failures shows (metrics, logs) in the step that failed.
        const read = this.servable(round.read);
        if (read.length > 0 && (await this.readAndDispatch(read))) busy = true;
        const claim = this.servable(round.claim);
        if (claim.length > 0 && (await this.reclaim(claim))) busy = true;
        // Nothing new, or every sale with work has its lane full: wait for a signal, a batch's end, or
        // the next round (WORKER_IDLE_MS while a sale is hot, the next sweep else).
        if (!busy) {
          const waitMs = this.schedule.idleWaitMs(
            performance.now(),
            this.options.idleMs,
            Math.max(this.options.idleMs, salesReadAt + this.options.salesRefreshMs - performance.now()),
          );
          await Promise.race([sleep(waitMs), this.lanes.nextEnd(), this.schedule.woken()]);
        }
        failures = 0;
      } catch (error) {
        failures += 1;
        this.deps.observer?.roundFailed(error);
        logger.error({ err: error, failures }, 'worker round failed; retrying');
        await sleep(backoffMs(failures));
      }
    }
    // Batches in hand go on to their end: written and acknowledged, or (MySQL away) abandoned, their
    // entries pending for another worker.
    await this.lanes.drain();
    if (this.batchFailure) logger.error({ err: this.batchFailure.error }, 'last batches not written; they stay pending for another worker');
  }

  /** The sales to read or claim now: not skipped for a fault of their own, and with room in their lane. */
  private servable(sales: number[]): number[] {
    const now = Date.now();
    return sales.filter((saleId) => this.lanes.hasRoom(saleId) && this.backoff.allows(saleId, now));
  }

  /**
   * Reads new entries of `sales` and starts a batch for each sale that had any; true when there were
   * any. Entries read are this worker's (pending on it) even when another sale's read failed, so they
   * are written before a failure that is not one sale's own fails the round.
   */
  private async readAndDispatch(sales: number[]): Promise<boolean> {
    const round = await this.deps.sales.readNewEntries(this.consumer, sales, this.options.batchSize);
    const now = performance.now();
    for (const saleId of sales) {
      // Read in part (or not at all, another worker having just read it): what arrives next gathers into one batch.
      if ((round.entries.get(saleId)?.length ?? 0) < this.options.batchSize && !round.failures.has(saleId))
        this.schedule.partlyRead(saleId, now, this.options.batchWaitMs ?? 0);
    }
    for (const [saleId, entries] of round.entries) {
      this.schedule.worked(saleId, now);
      this.hold(
        saleId,
        entries.map((entry) => entry.id),
      );
      this.dispatch(
        saleId,
        entries.map((entry) => ({ entry, deliveries: 1 })),
      );
    }
    let roundFailure: { error: unknown } | undefined;
    for (const saleId of sales) {
      const failure = round.failures.get(saleId);
      if (failure === undefined) this.backoff.succeeded(saleId, 'read');
      else if (!this.backoff.failed(saleId, 'read', failure)) roundFailure ??= { error: failure };
    }
    if (roundFailure) throw roundFailure.error;
    return round.entries.size > 0;
  }

  /** Takes over entries idle on other consumers and starts their batches; true when there were any. */
  private async reclaim(sales: number[]): Promise<boolean> {
    const round = await this.deps.sales.claimIdleEntriesOf(this.consumer, sales, this.options.claimIdleMs, this.options.batchSize);
    let roundFailure: { error: unknown } | undefined;
    for (const saleId of sales) {
      const failure = round.failures.get(saleId);
      if (failure === undefined) this.backoff.succeeded(saleId, 'claim');
      else if (!this.backoff.failed(saleId, 'claim', failure)) roundFailure ??= { error: failure };
    }
    for (const [saleId, claimed] of round.claimed) {
      this.deps.logger.warn({ saleId, entries: claimed.length }, 'took over entries left pending by another consumer');
      this.hold(
        saleId,
        claimed.map((delivery) => delivery.entry.id),
      );
      this.dispatch(saleId, claimed);
    }
    if (roundFailure) throw roundFailure.error;
    return round.claimed.size > 0;
  }

  /**
   * Starts writing a batch of entries this worker holds, in the sale's lane. Its failure is the sale's
   * (skipped for a while) or, if not, the round's: the loop backs off. Either way its entries stay
   * pending, to be claimed again.
   */
  private dispatch(saleId: number, deliveries: Delivery[]): void {
    const batch = this.process(saleId, deliveries).then(
      () => this.backoff.succeeded(saleId, 'batch'),
      (error: unknown) => {
        if (error instanceof Abandoned || this.backoff.failed(saleId, 'batch', error)) return;
        this.batchFailure ??= { error };
      },
    );
    this.lanes.run(saleId, batch);
  }

  /** Writes one sale's batch of entries this worker holds, then lets go of them. */
  private async process(saleId: number, deliveries: Delivery[]): Promise<void> {
    try {
      await this.intake.take(saleId, deliveries);
    } finally {
      // Acknowledged or set aside; or, if this failed, left pending for a claim (by this worker or another).
      this.release(
        saleId,
        deliveries.map((delivery) => delivery.entry.id),
      );
    }
  }
}
