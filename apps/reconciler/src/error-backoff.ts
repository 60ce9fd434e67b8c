import type { Logger } from '@flashsale/runtime';

/** How long a BullMQ worker that met an error rests first, and at most (doubling while errors go on). */
const FIRST_REST_MS = 250;
const LONGEST_REST_MS = 30_000;
/** At most one log line per this, summing the errors met since the last. */
const SUMMARY_EVERY_MS = 10_000;

/** What a BullMQ Worker offers to rest it (pause without waiting for its jobs, resume). */
export interface Restable {
  pause(doNotWaitActive?: boolean): Promise<void>;
  resume(): Promise<void> | void;
}

/** A queue (or a loop that rests by itself) has nothing to rest: its errors are only summed up in the log. */
export const NOT_RESTABLE: Restable = { pause: async () => undefined, resume: () => undefined };

/**
 * Backs a BullMQ worker off while Redis refuses it, instead of letting it spin. BullMQ's fetch loop
 * answers an error that is not a lost connection (Redis out of memory, `BUSY`, `READONLY`, `LOADING`)
 * by emitting it and asking again at once: measured under OOM, 14,000 failing calls and 5,000 log lines
 * a second from one reconciler. Here the first error pauses the worker, which resumes after a rest that
 * doubles (250 ms up to 30 s) while errors keep coming and starts over once one rest passes without
 * any; the errors are logged as one line per 10 s with their count and the last one.
 */
export class ErrorBackoff {
  private restMs = FIRST_REST_MS;
  private resting = false;
  private lastErrorAt = -Infinity;
  private unlogged = 0;
  private lastError: Error | undefined;
  private loggedAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  /** An error of `worker` (its 'error' event). */
  failed(worker: Restable, error: Error): void {
    const now = performance.now();
    // Errors after a whole quiet rest are a new episode: start from the first rest again.
    if (now - this.lastErrorAt > this.restMs * 2 + FIRST_REST_MS) this.restMs = FIRST_REST_MS;
    this.lastErrorAt = now;
    this.unlogged += 1;
    this.lastError = error;
    if (now - this.loggedAt >= SUMMARY_EVERY_MS) this.summarise(now);
    if (this.resting || this.stopped) return;
    this.resting = true;
    const restMs = this.restMs;
    this.restMs = Math.min(LONGEST_REST_MS, this.restMs * 2);
    void worker.pause(true).then(() => {
      this.timer = setTimeout(() => {
        this.resting = false;
        if (!this.stopped) void worker.resume();
      }, restMs);
    });
  }

  /** Stops resuming (the process is stopping). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private summarise(now: number): void {
    this.logger.warn(
      { errors: this.unlogged, restMs: this.restMs, err: this.lastError, part: this.what },
      'failing on Redis or MySQL: resting, errors summed up once per 10 s',
    );
    this.loggedAt = now;
    this.unlogged = 0;
  }
}
