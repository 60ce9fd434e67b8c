import type { Logger } from '@flashsale/runtime';
import type { Sales } from '@flashsale/sales';
import { SeriesRing, type SeriesPoints } from './series-ring.ts';
import type { TrafficSampler } from './traffic-sampler.ts';

/**
 * More series of a sale, read at each step beside the built-in ones: the extension point for what a
 * sale gains (a queued sale's waiting, admitted and frontier). Values are numbers or null (not known);
 * the page draws a chart for the names its SALE_CHARTS list (public/admin/dashboard.js) asks for.
 */
export type SaleSeriesSource = (saleId: number) => Promise<Record<string, number | null>>;

export interface SaleHistoryOptions {
  /** Time between two points (DASHBOARD_HISTORY_STEP_MS). */
  stepMs: number;
  /** How far back the history reaches (DASHBOARD_HISTORY_SECONDS x 1000). */
  windowMs: number;
  /** The most sales followed at once (DASHBOARD_HISTORY_MAX_SALES). */
  maxSales: number;
  /** The sales to follow: the live ones (the gateway's live-sale directory). */
  liveSaleIds: () => number[];
  /** Series beyond the built-in ones, for every sale followed. */
  extraSeries?: SaleSeriesSource[];
}

/** Built-in series of a sale (6) and the room left for extraSeries (4). */
const SALE_SERIES = 10;
/** The process's series: purchases per second by outcome (one per error code at most) and p50, p99. */
const PROCESS_SERIES = 48;

/**
 * The dashboard's history: a point per step for each live sale (read from Redis: what every gateway and
 * worker did) and for this gateway process (its purchase counters and latency histogram), kept for
 * `windowMs`, so a page opened or reloaded mid-sale draws the sale since it began (within the window).
 * Taken whether or not a page watches, at a fixed cost: per step, three Redis reads per live sale (at
 * most maxSales) and none for the process. Its memory is bounded in advance (maxBytes): rings of typed
 * arrays, one per sale followed and one for the process.
 *
 * A sale's series, all fleet-wide since they come from Redis: remaining and stock; units accepted per
 * second (the rise of stock - remaining: units that come back or are added do not count); entries in
 * flight (not yet delivered, or delivered and not acknowledged) and lag (not yet delivered); entries
 * acknowledged per second less those dead-lettered, i.e. orders written per second by every worker.
 */
export class SaleHistory {
  private readonly capacity: number;
  private readonly sales = new Map<number, SeriesRing>();
  private readonly previous = new Map<number, { at: number; sold: number | null; written: number | null }>();
  readonly process: SeriesRing;
  private timer: NodeJS.Timeout | undefined;
  /** The step being taken, if any: a step still running is not doubled, and stop() waits for it. */
  private step: Promise<void> | undefined;

  constructor(
    private readonly stores: Pick<Sales, 'saleState' | 'writersProgress'>,
    private readonly traffic: TrafficSampler,
    private readonly logger: Logger,
    private readonly options: SaleHistoryOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.capacity = Math.max(2, Math.ceil(options.windowMs / options.stepMs));
    this.process = new SeriesRing(this.capacity, PROCESS_SERIES);
  }

  /** Takes a point now and then every step, until stop(). */
  start(): void {
    if (this.timer) return;
    void this.sample();
    this.timer = setInterval(() => void this.sample(), this.options.stepMs);
    this.timer.unref();
  }

  /** Takes no more points; resolves once a step still running has ended (its Redis reads answered). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    // A step that failed was the timer's to report; stopping is not the place to fail for it.
    await this.step?.catch(() => undefined);
  }

  /** A sale's points (all, or the newest `last`), or undefined when it is not followed. */
  salePoints(saleId: number, last?: number): SeriesPoints | undefined {
    return this.sales.get(saleId)?.points(last);
  }

  /** Bytes held now by every ring. */
  get bytes(): number {
    return this.process.bytes + [...this.sales.values()].reduce((sum, ring) => sum + ring.bytes, 0);
  }

  /** The most bytes the history can hold under its options: what docs/operations.md states. */
  get maxBytes(): number {
    return historyMaxBytes(this.capacity, this.options.maxSales);
  }

  /** Takes one point of the process and of each sale followed (a step still running is not doubled). */
  sample(): Promise<void> {
    this.step ??= this.takeStep().finally(() => {
      this.step = undefined;
    });
    return this.step;
  }

  private async takeStep(): Promise<void> {
    const at = this.now();
    const traffic = await this.traffic.sample();
    if (traffic)
      this.process.push(at, { ...Object.fromEntries(Object.entries(traffic.perSecond)), p50Ms: traffic.p50Ms, p99Ms: traffic.p99Ms });
    const followed = [...this.options.liveSaleIds()].sort((a, b) => b - a).slice(0, this.options.maxSales);
    await Promise.all(
      followed.map((saleId) =>
        this.sampleSale(saleId, at).catch((error: unknown) =>
          this.logger.warn({ err: error, saleId }, 'dashboard history: sale not read this step'),
        ),
      ),
    );
    this.forgetBeyond(new Set(followed), at);
  }

  private async sampleSale(saleId: number, at: number): Promise<void> {
    const [state, progress, ...extra] = await Promise.all([
      this.stores.saleState(saleId),
      this.stores.writersProgress(saleId),
      ...(this.options.extraSeries ?? []).map((source) => source(saleId)),
    ]);
    const sold = state ? state.stock - state.remaining : null;
    const written = progress.acknowledged === null ? null : progress.acknowledged - progress.deadLettered;
    const before = this.previous.get(saleId);
    this.previous.set(saleId, { at, sold, written });
    const seconds = before ? (at - before.at) / 1000 : 0;
    const rate = (now: number | null, then: number | null | undefined) =>
      now === null || then === null || then === undefined || seconds <= 0
        ? null
        : Math.round((Math.max(0, now - then) / seconds) * 10) / 10;
    let ring = this.sales.get(saleId);
    if (!ring) this.sales.set(saleId, (ring = new SeriesRing(this.capacity, SALE_SERIES)));
    const more: Record<string, number | null> = {};
    for (const values of extra) Object.assign(more, values);
    ring.push(at, {
      ...more,
      remaining: state ? state.remaining : null,
      stock: state ? state.stock : null,
      acceptedPerSecond: rate(sold, before?.sold),
      writtenPerSecond: rate(written, before?.written),
      inFlight: progress.lag + progress.pending,
      lag: progress.lag,
    });
  }

  /**
   * Keeps at most maxSales rings: a sale no longer followed (ended, or pushed out by newer ones) keeps
   * its history while there is room and its points are within the window, the oldest going first.
   */
  private forgetBeyond(followed: Set<number>, at: number): void {
    for (const [saleId, ring] of this.sales) {
      if (!followed.has(saleId) && (ring.lastAt ?? 0) < at - this.options.windowMs) this.drop(saleId);
    }
    const idle = [...this.sales].filter(([saleId]) => !followed.has(saleId)).sort(([, a], [, b]) => (a.lastAt ?? 0) - (b.lastAt ?? 0));
    while (this.sales.size > this.options.maxSales && idle.length > 0) this.drop(idle.shift()![0]);
  }

  private drop(saleId: number): void {
    this.sales.delete(saleId);
    this.previous.delete(saleId);
  }
}

/** The most bytes a history of `capacity` points per ring and `maxSales` sales holds. */
export function historyMaxBytes(capacity: number, maxSales: number): number {
  return (maxSales * (1 + SALE_SERIES) + (1 + PROCESS_SERIES)) * capacity * Float64Array.BYTES_PER_ELEMENT;
}
