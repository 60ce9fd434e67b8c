import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@flashsale/runtime';
import type { ExpiryPassResult, Sales } from '@flashsale/sales';

export interface OrderExpiryOptions {
  /** Time between passes (EXPIRY_SWEEP_MS). */
  everyMs: number;
  /** Orders per sale and transaction, returns per page (EXPIRY_BATCH_SIZE). */
  batchSize: number;
}

export interface OrderExpiryObserver {
  passed(result: ExpiryPassResult, seconds: number): void;
  failed(error: unknown): void;
}

/**
 * Expires unpaid orders and gives their units back, in every worker process: a sweep of MySQL (the
 * (status, pay_by) index) every `everyMs`, rather than a delayed job per order. The sweep keeps nothing
 * but MySQL's rows: a worker killed mid-pass, Redis losing its data, or several workers sweeping at
 * once change nothing but who does the work (see runExpiryPass). Delayed BullMQ jobs would live in
 * Redis, the store whose loss this must survive, and cost a key per unpaid order.
 */
export class OrderExpiry {
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: AbortController | undefined;
  readonly totals = { expired: 0, returnedOrders: 0, returnedUnits: 0, failures: 0 };

  constructor(
    private readonly deps: { sales: Pick<Sales, 'runExpiryPass'>; logger: Logger },
    private readonly options: OrderExpiryOptions,
    private readonly observer?: OrderExpiryObserver,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Finishes the pass in hand (its commits are whole; what it had not returned waits in MySQL) and stops. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      const started = performance.now();
      try {
        const result = await this.deps.sales.runExpiryPass(this.options.batchSize);
        this.totals.expired += result.expired;
        this.totals.returnedOrders += result.orders;
        this.totals.returnedUnits += result.units;
        if (result.expired > 0 || result.orders > 0)
          this.deps.logger.info(
            { expired: result.expired, returnedOrders: result.orders, returnedUnits: result.units, waiting: result.waiting },
            'expiry pass',
          );
        this.observer?.passed(result, (performance.now() - started) / 1000);
        // A full batch means more are due: go on at once rather than a period later.
        if (result.expired >= this.options.batchSize) continue;
      } catch (error) {
        this.totals.failures++;
        this.observer?.failed(error);
        this.deps.logger.warn({ err: error }, 'expiry pass failed; retried at the next one');
      }
      this.wake = new AbortController();
      await sleep(this.options.everyMs, undefined, { signal: this.wake.signal }).catch(() => undefined);
    }
  }
}
