/**
 * Which sales a worker reads in a round, so that what an idle worker costs does not grow with the number
 * of live sales:
 *
 * - **Hot** sales are read every round (every WORKER_IDLE_MS when nothing came, at once when a batch
 *   ends): a sale a gateway signalled (WorkSignaller) or whose last read gave entries, for `hotMs` after.
 *   A sale under load stays hot for as long as it takes purchases.
 * - Every listed sale is also **swept** (read without a signal) in turn, round robin: each at least every
 *   `sweepMs`, but never more than `sweepPerSecond` sales a second, so with N live sales each is swept
 *   every max(sweepMs, N / sweepPerSecond). The signal is a hint; the sweep is what makes a lost one cost a
 *   delay and never an entry. After a start or a lost subscription, one whole sweep goes at once
 *   (in rounds of `burst` sales), since signals may have been missed.
 * - A sale whose last read gave **less than a batch** (part of one, or nothing) is not read again until
 *   `batchWaitMs` after it (partlyRead()): at a moderate rate, reading at once gives a batch of a few
 *   entries per read, each a MySQL transaction and Redis round trips of its own; waiting gathers what
 *   arrives into one. A sale whose read filled a batch is read again at once: a backlog drains at full
 *   speed. A signal does not cut the wait short: the sale is read when it ends.
 * - Entries left pending by a dead worker are claimed on a sale when it is read and its last claim is
 *   `claimEveryMs` old.
 *
 * An idle worker therefore costs about min(N x 1000 / sweepMs, sweepPerSecond) reads a second, and
 * (at most) as many claims every claimEveryMs: bounded whatever N. Memory: a few numbers per listed sale.
 * Times are monotonic milliseconds (performance.now()), the worker's own intervals.
 */
export interface SaleScheduleOptions {
  sweepMs: number;
  sweepPerSecond: number;
  hotMs: number;
  /**
   * A sale active lately (signalled, or a read gave entries, within `activeForClaimsMs`) has its pending
   * entries claimed this often: a worker that died while the sale was selling.
   */
  claimEveryMs: number;
  activeForClaimsMs: number;
  /** Any other sale's, when swept, this often (entries idle for less than the claim timeout cannot be taken anyway). */
  coldClaimEveryMs: number;
  /** Most sales one round sweeps, which bounds one pipeline. */
  burst: number;
}

export interface Round {
  /** Sales to read now (hot ones, then swept ones; no duplicates). */
  read: number[];
  /** Of those, the sales whose idle pending entries to claim now. */
  claim: number[];
}

/** The shortest wait of an idle worker between two sweeping rounds, in ms. */
const SWEEP_ROUND_MS = 50;

export class SaleSchedule {
  private sales: number[] = [];
  private listed = new Set<number>();
  private readonly hotUntil = new Map<number, number>();
  private readonly claimedAt = new Map<number, number>();
  private readonly activeAt = new Map<number, number>();
  /** Sales read in part lately, and when they may be read again. */
  private readonly readableAt = new Map<number, number>();
  private cursor = 0;
  /** Sweeps earned and not yet made (fractional), capped at one whole sweep. */
  private credit = 0;
  private creditAt: number | undefined;
  /** Sales still to sweep at once (after a start or a lost subscription). */
  private catchUp = 0;
  /** Sales signalled before they were on the list (published since it was read): hot once listed. */
  private readonly signalledUnlisted = new Set<number>();
  private wake: PromiseWithResolvers<void> | undefined;

  constructor(private readonly options: SaleScheduleOptions) {}

  /** The list of live sales, read again now and then. Sales no longer listed are forgotten. */
  setSales(sales: number[], now: number): void {
    const first = this.listed.size === 0 && this.sales.length === 0;
    this.sales = sales;
    this.listed = new Set(sales);
    for (const map of [this.hotUntil, this.claimedAt, this.activeAt, this.readableAt])
      for (const saleId of map.keys()) if (!this.listed.has(saleId)) map.delete(saleId);
    if (this.cursor >= sales.length) this.cursor = 0;
    this.catchUp = Math.min(this.catchUp, sales.length);
    for (const saleId of this.signalledUnlisted) if (this.listed.has(saleId)) this.worked(saleId, now);
    this.signalledUnlisted.clear();
    if (first) this.sweepAll();
  }

  /** True when a signal named a sale not on the list (published since it was read): read the list again. */
  wantsSales(): boolean {
    return this.signalledUnlisted.size > 0;
  }

  /** A gateway signalled work on the sale: read it from the next round on, and wake an idle loop. */
  signal(saleId: number, now: number): void {
    if (!this.listed.has(saleId)) {
      // Bounded: ids signalled by mistake are dropped at the next list read.
      if (this.signalledUnlisted.size < 10_000) this.signalledUnlisted.add(saleId);
    } else {
      this.hotUntil.set(saleId, now + this.options.hotMs);
      this.activeAt.set(saleId, now);
    }
    this.wake?.resolve();
    this.wake = undefined;
  }

  /** A read of the sale gave entries: it stays hot. */
  worked(saleId: number, now: number): void {
    if (!this.listed.has(saleId)) return;
    this.hotUntil.set(saleId, now + this.options.hotMs);
    this.activeAt.set(saleId, now);
  }

  /** A read of the sale gave less than a batch: it is not read again for `waitMs` (see the class comment). */
  partlyRead(saleId: number, now: number, waitMs: number): void {
    if (waitMs > 0 && this.listed.has(saleId)) this.readableAt.set(saleId, now + waitMs);
  }

  /** Sweeps every sale once, at once (signals may have been missed). */
  sweepAll(): void {
    this.catchUp = this.sales.length;
    this.wake?.resolve();
    this.wake = undefined;
  }

  /** The sales to read (and claim) in this round. */
  round(now: number): Round {
    const read: number[] = [];
    const waiting = new Set<number>();
    for (const [saleId, at] of this.readableAt) {
      if (at <= now) this.readableAt.delete(saleId);
      else waiting.add(saleId);
    }
    for (const [saleId, until] of this.hotUntil) {
      if (until <= now) this.hotUntil.delete(saleId);
      else if (!waiting.has(saleId)) read.push(saleId);
    }
    const sweep = this.sweepCount(now);
    // A sale gathering a batch was read less than batchWaitMs ago: its sweep is not due.
    const taken = new Set([...read, ...waiting]);
    for (let i = 0; i < sweep && this.sales.length > 0; i++) {
      const saleId = this.sales[this.cursor]!;
      this.cursor = (this.cursor + 1) % this.sales.length;
      if (!taken.has(saleId)) {
        taken.add(saleId);
        read.push(saleId);
      }
    }
    const claim = read.filter((saleId) => {
      const active = now - (this.activeAt.get(saleId) ?? -Infinity) < this.options.activeForClaimsMs;
      const every = active ? this.options.claimEveryMs : this.options.coldClaimEveryMs;
      return now - (this.claimedAt.get(saleId) ?? -Infinity) >= every;
    });
    for (const saleId of claim) this.claimedAt.set(saleId, now);
    return { read, claim };
  }

  /**
   * How long an idle loop may wait before the next round: `idleMs` while a sale is hot (or until the
   * first hot sale gathering a batch may be read again, if later), else until the next sweep is due (at
   * most `maxMs`). A signal ends the wait early (see woken()).
   */
  idleWaitMs(now: number, idleMs: number, maxMs: number): number {
    if (this.catchUp > 0) return idleMs;
    if (this.hotUntil.size > 0) {
      // Every hot sale gathering a batch: nothing to read before the first of them may be read again.
      let first = Infinity;
      for (const saleId of this.hotUntil.keys()) first = Math.min(first, this.readableAt.get(saleId) ?? now);
      return Math.max(idleMs, Math.min(maxMs, first - now));
    }
    const speed = this.speed();
    if (speed === 0) return maxMs;
    // Sweeps are gathered into rounds at least SWEEP_ROUND_MS apart: 400 sales a second swept one a
    // round cost the worker a round each (6.6% of a core at 100 idle sales); 20 rounds of 20 cost a
    // fraction of that, and a sale's sweep is at most that much later. A signal still wakes it at once.
    const untilNext = Math.max(SWEEP_ROUND_MS, ((1 - this.credit) / speed) * 1000);
    return Math.max(idleMs, Math.min(maxMs, untilNext));
  }

  /** Resolves at the next signal (or sweepAll); race it with the idle wait. */
  woken(): Promise<void> {
    this.wake ??= Promise.withResolvers<void>();
    return this.wake.promise;
  }

  /** Sales swept per second: every sale each sweepMs, within the rate. */
  private speed(): number {
    return Math.min(this.options.sweepPerSecond, (this.sales.length * 1000) / this.options.sweepMs);
  }

  private sweepCount(now: number): number {
    const elapsed = this.creditAt === undefined ? 0 : Math.max(0, now - this.creditAt);
    this.creditAt = now;
    this.credit = Math.min(this.sales.length, this.credit + (this.speed() * elapsed) / 1000);
    const limit = Math.min(this.options.burst, this.sales.length);
    const earned = Math.min(Math.floor(this.credit), limit);
    this.credit -= earned;
    const extra = Math.min(this.catchUp, limit - earned);
    this.catchUp -= extra;
    return earned + extra;
  }
}
