import type { Logger } from '@flashsale/runtime';
import {
  WatchStepOverdueError,
  withinDeadline,
  type DoorGauges,
  type Sales,
  type SaleSnapshot,
  type SaleVisit,
  type WatchedSale,
  type WatchSettings,
} from '@flashsale/sales';
import { WatchRota } from './watch-rota.ts';
import { ErrorBackoff, NOT_RESTABLE } from './error-backoff.ts';

/** The steps of the watch, each under RECONCILER_WATCH_STEP_TIMEOUT_MS (the metric's `step` label). */
export type WatchStep = 'list' | 'look' | 'door' | 'retire' | 'mysql_identity' | 'audit_schedule';

export interface WatchLoopOptions extends Omit<WatchSettings, 'onSaleError'> {
  watchEveryMs: number;
  /** The most sales watched per second (RECONCILER_WATCH_PER_SECOND; see WatchRota). */
  watchPerSecond: number;
  /** The longest one step of the watch may take before it is passed over (RECONCILER_WATCH_STEP_TIMEOUT_MS; see withinDeadline). */
  watchStepTimeoutMs: number;
}

export interface WatchLoopDeps {
  sales: Pick<Sales, 'saleWatch' | 'doorGauges'>;
  logger: Logger;
  /** Sets the audit's schedule again: it lives in Redis, and a Redis that lost its data lost it too. */
  scheduleAudit(): Promise<void>;
  /** A round listed these sales: what is kept of any other may go. */
  onListed?(saleIds: ReadonlySet<number>): void;
  /** A sale whose look failed on its own (the others went on). */
  onSaleError(saleId: number, error: unknown): void;
  /** A look at a live sale: what Redis showed (the per-sale gauges). */
  onSaleSeen?(saleId: number, snapshot: SaleSnapshot): void;
  /** A look at a live queued sale's door (read at the look's time, never moved: readDoorGauges). */
  onDoorSeen?(saleId: number, door: DoorGauges): void;
  /** A sale retired (see isRetired) or no longer watched: nothing more is told of it until seen live again. */
  onSaleGone?(saleId: number): void;
  /** A step of the watch passed over for not finishing within its deadline (also logged, with the sale). */
  onWatchOverdue?(step: WatchStep): void;
  /** A pass or a step failed as a whole (Redis or MySQL away, mostly). */
  onFailure?(error: unknown): void;
}

/**
 * The reconciler's watch, its own loop rather than a BullMQ schedule (a Redis that lost its data lost
 * those too): each sale is looked at in turn, the most overdue first, within the rate (WatchRota); a look
 * (packages/sales/src/sale-watch.ts) asks for a reconciliation of a state lost or stale and records the
 * checkpoints. The loop keeps what one look leaves for the next: the sales found paused (taken up at the
 * second look running), and what each look saw (the audit's view: fingerprintOf).
 */
export class WatchLoop {
  private timer: NodeJS.Timeout | undefined;
  private watching: Promise<void> = Promise.resolve();
  private inProgress = false;
  private readonly rota: WatchRota;
  private readonly saleWatch: ReturnType<Sales['saleWatch']>;
  /** When the list of sales was last read, and the audit's schedule last set (monotonic ms). */
  private listedAt = -Infinity;
  private scheduledAt = -Infinity;
  /** The watch's failures (every tick while Redis or MySQL is away), summed up in one log line per interval. */
  private readonly errors: ErrorBackoff;
  /** Sales the last look found paused (by a reconciliation): at the next look still paused, one is queued. */
  private readonly pausedLastPass = new Set<number>();
  /** What each sale's last look saw (its fingerprint). */
  private readonly observed = new Map<number, string>();
  /** Sales whose last look found their Redis server refusing writes for memory: said once when the first is seen, once when the last is not. */
  private readonly outOfMemory = new Set<number>();

  constructor(
    private readonly deps: WatchLoopDeps,
    private readonly options: WatchLoopOptions,
  ) {
    this.errors = new ErrorBackoff(deps.logger, 'watch');
    this.rota = new WatchRota({ everyMs: options.watchEveryMs, perSecond: options.watchPerSecond });
    const { watchEveryMs: _every, watchPerSecond: _rate, watchStepTimeoutMs: _deadline, ...settings } = options;
    this.saleWatch = deps.sales.saleWatch({ ...settings, onSaleError: deps.onSaleError });
  }

  /** Ticks of at most 100 ms: the rota spreads the looks over them at the rate (WatchRota). */
  start(): void {
    this.timer = setInterval(
      () => {
        // One tick at a time: while one hangs (Redis or MySQL away) the others are skipped, not queued.
        if (this.inProgress) return;
        this.inProgress = true;
        this.watching = this.tick().finally(() => {
          this.inProgress = false;
        });
      },
      Math.min(100, this.options.watchEveryMs),
    );
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.watching;
  }

  /** The sales the last round listed, null before the first round. */
  listedSaleIds(): number[] | null {
    return this.rota.size > 0 ? this.rota.saleIds() : null;
  }

  /** What the last look at a sale saw, as a string to compare: equal means nothing happened in between. */
  fingerprintOf(saleId: number): string | undefined {
    return this.observed.get(saleId);
  }

  /**
   * One tick of the watch: once a round (WatchRota.roundMs), the list of sales is read again (and
   * unfinished creates settled, drained sales retired); then the sales due are looked at, within the rate.
   */
  private async tick(): Promise<void> {
    try {
      const now = performance.now();
      let listed: WatchedSale[] | undefined;
      if (now - this.listedAt >= this.rota.roundMs()) {
        listed = await this.step('list', undefined, () => this.saleWatch.listSales());
        this.rota.setSales(
          listed.filter((sale) => sale.settled),
          now,
        );
        const ids = new Set(listed.map((sale) => sale.id));
        for (const saleId of this.observed.keys()) if (!ids.has(saleId)) this.deps.onSaleGone?.(saleId);
        for (const saleId of this.observed.keys()) if (!ids.has(saleId)) this.observed.delete(saleId);
        for (const set of [this.outOfMemory, this.pausedLastPass]) for (const saleId of set) if (!ids.has(saleId)) set.delete(saleId);
        this.deps.onListed?.(ids);
        this.listedAt = now;
      }
      // The looks first: they read, and free (retention's XTRIM), both of which Redis allows when it is
      // out of memory. What writes (re-listing sales, the audit's schedule) comes after, and its failure
      // (OOM, mostly) fails that step alone, never the looks: a full Redis is emptied by this loop.
      for (const sale of this.rota.due(performance.now())) await this.look(sale);
      if (listed) {
        const watched = listed;
        await this.afterLooks('retire', () => this.saleWatch.retireFinished(watched));
        // Once a round, after the looks: MySQL's identity against the one Redis remembers (watchMysqlServer).
        const saleIds = watched.filter((sale) => sale.settled).map((sale) => sale.id);
        await this.afterLooks('mysql_identity', async () => void (await this.saleWatch.watchMysqlServer(saleIds)));
      }
      // The audit's schedule lives in Redis; a Redis that lost its data lost it too, so it is set again
      // now and then (upserting an existing scheduler changes nothing).
      if (now - this.scheduledAt >= 10_000 && this.listedAt !== -Infinity) {
        this.scheduledAt = now;
        await this.afterLooks('audit_schedule', () => this.deps.scheduleAudit());
      }
    } catch (error) {
      this.failed(error);
    }
  }

  /** One look at a due sale, then what it tells: the sale's gauges, its door, when to look again. */
  private async look(sale: WatchedSale): Promise<void> {
    let visit: SaleVisit | undefined;
    try {
      visit = await this.step('look', sale.id, (signal) =>
        this.saleWatch.look(sale, { pausedBefore: this.pausedLastPass.has(sale.id), signal }),
      );
    } catch (error) {
      if (!(error instanceof WatchStepOverdueError)) throw error;
      // Passed over (logged and counted): looked at again soon, as a sale that changed, while the
      // loop goes on to the others.
      this.rota.visited(sale, performance.now(), true);
      return;
    }
    if (!visit) {
      // Its own failure (logged and counted): looked at again in a whole round, not at every tick.
      this.rota.visited(sale, performance.now(), false);
      return;
    }
    if (visit.verdict.kind === 'paused') this.pausedLastPass.add(sale.id);
    else this.pausedLastPass.delete(sale.id);
    this.observed.set(sale.id, fingerprintOf(visit.snapshot));
    this.noteMemory(sale.id, visit.snapshot);
    if (this.isRetired(visit)) this.deps.onSaleGone?.(sale.id);
    else {
      this.deps.onSaleSeen?.(sale.id, visit.snapshot);
      if (sale.admission && visit.snapshot.present && this.deps.onDoorSeen) {
        const at = visit.snapshot.at;
        await this.step('door', sale.id, () => this.lookAtDoor(sale.id, at)).catch(passOverdue);
      }
    }
    this.rota.visited(visit.sale, performance.now(), visit.changed);
  }

  /** The door's gauges of a queued sale: one MULTI of reads; its failure is this sale's alone. */
  private async lookAtDoor(saleId: number, at: number): Promise<void> {
    try {
      const door = await this.deps.sales.doorGauges(saleId, at);
      if (door) this.deps.onDoorSeen?.(saleId, door);
    } catch (error) {
      this.deps.onSaleError(saleId, error);
    }
  }

  /**
   * Says once that Redis refuses writes for memory (every purchase on it answers 503, and the sale's
   * public status says `paused`), and once that it takes them again: a condition, not one line a pass.
   */
  private noteMemory(saleId: number, { memory }: SaleSnapshot): void {
    const before = this.outOfMemory.size;
    if (memory.refusesWrites) this.outOfMemory.add(saleId);
    else this.outOfMemory.delete(saleId);
    if (before === 0 && this.outOfMemory.size > 0) {
      this.deps.logger.warn(
        { saleId, usedMemoryBytes: memory.countedBytes, maxmemoryBytes: memory.maxmemoryBytes },
        'Redis refuses writes (over maxmemory): purchases answer 503 until retention frees acknowledged stream entries; if the buyers alone fill it, raise maxmemory',
      );
    } else if (before > 0 && this.outOfMemory.size === 0) {
      this.deps.logger.info(
        { usedMemoryBytes: memory.countedBytes, maxmemoryBytes: memory.maxmemoryBytes },
        'Redis takes writes again (under maxmemory)',
      );
    }
  }

  /** A step of the watch after its looks: its failure is summed up in the log, the pass goes on. */
  private async afterLooks(step: WatchStep, work: () => Promise<void>): Promise<void> {
    try {
      await this.step(step, undefined, work);
    } catch (error) {
      this.failed(error);
    }
  }

  /** A failed pass or step: summed up in the log; an overdue one was already logged and counted. */
  private failed(error: unknown): void {
    if (error instanceof WatchStepOverdueError) return;
    this.deps.onFailure?.(error);
    this.errors.failed(NOT_RESTABLE, error as Error);
  }

  /**
   * One step of the watch within RECONCILER_WATCH_STEP_TIMEOUT_MS (withinDeadline): past it, the step
   * is logged (with its sale) and counted, and fails with WatchStepOverdueError, so no step can hold up
   * the loop, and with it every other sale's look, without a word.
   */
  private async step<T>(step: WatchStep, saleId: number | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const deadlineMs = this.options.watchStepTimeoutMs;
    try {
      return await withinDeadline(step, deadlineMs, work);
    } catch (error) {
      if (error instanceof WatchStepOverdueError) {
        this.deps.onWatchOverdue?.(step);
        this.deps.logger.warn({ step, saleId, deadlineMs }, 'watch step overdue: passed over, the watch goes on');
      }
      throw error;
    }
  }

  /**
   * Whether a look found the sale retired: ended retireAfterEndMs ago on Redis's clock and drained, the
   * rule retireFinishedSales takes it off the workers' list by. It is still watched (and audited) until
   * RECONCILER_WATCH_AFTER_END_MS, but no longer live for the metrics.
   */
  private isRetired({ sale, snapshot }: SaleVisit): boolean {
    const drained = snapshot.backlog === null || (snapshot.backlog.lag === 0 && snapshot.backlog.pending === 0);
    return drained && snapshot.at >= sale.endsAt + this.options.retireAfterEndMs;
  }
}

/** Swallows a step's overdue failure (already logged and counted); anything else goes on. */
function passOverdue(error: unknown): void {
  if (!(error instanceof WatchStepOverdueError)) throw error;
}

/** What a look saw of a sale's state, as a string to compare: equal means nothing happened in between. */
function fingerprintOf(snapshot: SaleSnapshot): string {
  return [snapshot.present, snapshot.generation, snapshot.paused, snapshot.remaining, snapshot.buyers, snapshot.lastEntryId].join('|');
}
