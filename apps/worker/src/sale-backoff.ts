import type { Logger } from '@flashsale/runtime';
import { storeFailures } from '@flashsale/sales';

/** The step of the worker that failed for a sale: reading its new entries, claiming idle ones, or a batch (write, XACK, dead letters). */
export type SaleStage = 'read' | 'claim' | 'batch';

/** What a sale's keys did wrong, in bounded words (a metric label): a key of the wrong type, or another refusal by Redis. */
export type SaleFaultKind = 'wrong_type' | 'redis_error';

/**
 * Whether an error is about one sale rather than Redis as a whole: Redis answered, and refused the
 * command for what this sale's keys hold (WRONGTYPE: a string or a hash where its stream or its dead
 * letters should be; or a script failing on them). Such an answer repeats on every attempt and says
 * nothing about the other sales, so it must not hold them up. Redis unreachable or unable to serve
 * (timeouts, disconnects, LOADING, OOM, a failover) and a connection refused its credentials are not
 * about one sale: undefined, and the loop retries as a whole, as it always did.
 */
export function saleFaultOf(error: unknown): SaleFaultKind | undefined {
  if (!(error instanceof Error) || error.name !== 'ReplyError' || storeFailures.isRedisUnavailable(error)) return undefined;
  if (/^(NOAUTH|WRONGPASS) /.test(error.message)) return undefined;
  return error.message.startsWith('WRONGTYPE ') ? 'wrong_type' : 'redis_error';
}

/** The first wait before a failing sale is tried again, doubling up to LAST_RETRY_MS. */
const FIRST_RETRY_MS = 500;
/**
 * The longest wait between two tries of a failing sale: a repaired sale resumes within it, and a sale
 * that stays broken costs one Redis call per step this often.
 */
const LAST_RETRY_MS = 10_000;
/** The same problem of the same sale is logged again at most this often (it is counted on every try). */
const RELOG_MS = 60_000;

interface Trouble {
  /** The steps that failed since the sale was last served without fault: each must work again. */
  failing: Set<SaleStage>;
  failures: number;
  retryAt: number;
  /** Whether a line of this episode was logged, so that its end is logged too. */
  logged: boolean;
}

/**
 * The sales a worker sets aside for a while because their own keys refuse it, so that one bad sale (a
 * key of the wrong type written by mistake) stalls only itself. A failing sale is skipped, then tried
 * again after a wait doubling from 500 ms to 10 s, for as long as it fails: nothing of it is dropped or
 * acknowledged meanwhile (its entries stay in the stream or pending), and once every step that failed
 * works again (an operator repaired the key) the sale is served like any other. Each failure is counted
 * (`onFailure`, the worker's metrics); a problem (Redis's answer) is logged once per sale, then at most
 * once a minute, whichever step meets it.
 */
export class SaleBackoff {
  private readonly troubles = new Map<number, Trouble>();
  private readonly lastLogged = new Map<number, { problem: string; at: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly onFailure: (saleId: number, stage: SaleStage, kind: SaleFaultKind) => void = () => undefined,
  ) {}

  /** Whether the sale may be tried now: nothing is wrong with it, or its wait is over. */
  allows(saleId: number, now = Date.now()): boolean {
    const trouble = this.troubles.get(saleId);
    return trouble === undefined || now >= trouble.retryAt;
  }

  /**
   * Takes note of a failure of `stage` if it is the sale's own (see saleFaultOf) and answers true; false
   * when it is not, for the caller to fail the round as a whole.
   */
  failed(saleId: number, stage: SaleStage, error: unknown, now = Date.now()): boolean {
    const kind = saleFaultOf(error);
    if (kind === undefined) return false;
    const trouble = this.troubles.get(saleId) ?? { failing: new Set<SaleStage>(), failures: 0, retryAt: now, logged: false };
    trouble.failing.add(stage);
    trouble.failures += 1;
    const waitMs = Math.min(FIRST_RETRY_MS * 2 ** (trouble.failures - 1), LAST_RETRY_MS);
    trouble.retryAt = now + waitMs;
    this.troubles.set(saleId, trouble);
    this.onFailure(saleId, stage, kind);
    const problem = (error as Error).message;
    const last = this.lastLogged.get(saleId);
    if (last === undefined || last.problem !== problem || now - last.at >= RELOG_MS) {
      trouble.logged = true;
      this.lastLogged.set(saleId, { problem, at: now });
      this.logger.error(
        { err: error, saleId, stage, kind, failures: trouble.failures, retryInMs: waitMs },
        'sale skipped for now: its Redis keys refuse the worker',
      );
    }
    return true;
  }

  /**
   * The sale's `stage` worked. Once every step that failed has (a repaired key), the sale is out of
   * trouble; a step that never failed proves nothing (reads work while dead letters cannot be written).
   */
  succeeded(saleId: number, stage: SaleStage): void {
    const trouble = this.troubles.get(saleId);
    if (trouble === undefined || !trouble.failing.delete(stage) || trouble.failing.size > 0) return;
    this.troubles.delete(saleId);
    if (trouble.logged) this.logger.info({ saleId, stage, failures: trouble.failures }, 'sale taken up again');
  }

  /** Sales in trouble: a step failed and has not worked since; each is retried after a wait. */
  count(): number {
    return this.troubles.size;
  }

  /** Forgets sales no longer in the sales index (retired, or a stray member removed). */
  keepOnly(saleIds: readonly number[]): void {
    const listed = new Set(saleIds);
    for (const saleId of this.troubles.keys()) if (!listed.has(saleId)) this.troubles.delete(saleId);
    for (const saleId of this.lastLogged.keys()) if (!listed.has(saleId)) this.lastLogged.delete(saleId);
  }
}
