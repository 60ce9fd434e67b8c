import { AppError } from '@flashsale/domain';

/** One open live stream's place: give it back when the stream ends. */
export interface StreamSlot {
  release(): void;
}

/**
 * The live streams (GET /admin/live) this gateway process holds open, by session: at most `perSession`
 * for one session and `perProcess` in all, so one session (or a stolen cookie) cannot fan the feed's reads
 * out without limit. A place is taken before anything is read for the stream (the sale's existence
 * included), so concurrent opens cannot all pass the count and then all open. Sign-out in this process
 * ends the session's streams at once (`endSession`); on another process, the per-event session check
 * does (dashboard.route.ts).
 */
export class LiveStreams {
  private readonly bySession = new Map<string, Set<() => void>>();
  private open = 0;

  constructor(
    private readonly perSession: number,
    private readonly perProcess: number,
    /** Seconds a refused page is asked to wait (Retry-After). */
    private readonly retryAfterSeconds = 5,
  ) {}

  /** Takes a place for a stream of `sessionId`, or throws 429 LIVE_STREAM_LIMIT; `end` closes the stream. */
  take(sessionId: string, end: () => void): StreamSlot {
    const streams = this.bySession.get(sessionId) ?? new Set();
    const retry = { 'Retry-After': String(this.retryAfterSeconds) };
    if (streams.size >= this.perSession)
      throw new AppError('LIVE_STREAM_LIMIT', { because: 'per_session', limit: this.perSession }, {}, retry);
    if (this.open >= this.perProcess)
      throw new AppError('LIVE_STREAM_LIMIT', { because: 'per_process', limit: this.perProcess }, {}, retry);
    streams.add(end);
    this.bySession.set(sessionId, streams);
    this.open += 1;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        streams.delete(end);
        if (streams.size === 0 && this.bySession.get(sessionId) === streams) this.bySession.delete(sessionId);
        this.open -= 1;
      },
    };
  }

  /** Ends every stream of a session on this process (its sign-out). */
  endSession(sessionId: string): void {
    for (const end of [...(this.bySession.get(sessionId) ?? [])]) end();
  }

  /** Streams open now: in all, and of one session. */
  count(sessionId?: string): number {
    return sessionId === undefined ? this.open : (this.bySession.get(sessionId)?.size ?? 0);
  }
}
