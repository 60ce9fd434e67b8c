/**
 * Every failure that is not an answer to a client: it ends a background job, a CLI run or a step of a
 * request before the request's own answer is made (the gateway turns DEADLINE_EXCEEDED into a 503). A
 * stable code each, which logs and BullMQ's failed reasons carry; add new ones, never rename. What a
 * client sees is in error-catalogue.ts.
 */
export const FAILURES = {
  /** Another process holds the sale's named lock for this step (a reconciliation running elsewhere). */
  SALE_LOCK_BUSY: 'another process is running this step for the sale',
  /** The sale's stream still had entries undelivered or pending when the reconciliation gave up waiting. */
  DRAIN_TIMEOUT: "the sale's stream did not drain in time",
  /** The sale to reconcile is not in MySQL: retrying cannot help. */
  SALE_NOT_FOUND: 'the sale is not in MySQL',
  /** A backing service did not answer within the time a request may wait for it. */
  DEADLINE_EXCEEDED: 'a backing service did not answer in time',
} as const satisfies Record<string, string>;

export type FailureCode = keyof typeof FAILURES;

/** A failure with its code; the subclasses below are what callers tell apart (instanceof). */
export class Failure extends Error {
  constructor(
    readonly code: FailureCode,
    detail?: string,
  ) {
    super(detail ?? FAILURES[code]);
  }
}

export class SaleLockBusy extends Failure {
  override readonly name = 'SaleLockBusy';
  constructor(detail?: string) {
    super('SALE_LOCK_BUSY', detail);
  }
}

export class DrainTimeout extends Failure {
  override readonly name = 'DrainTimeout';
  constructor(detail?: string) {
    super('DRAIN_TIMEOUT', detail);
  }
}

export class SaleNotFound extends Failure {
  override readonly name = 'SaleNotFound';
  constructor(detail?: string) {
    super('SALE_NOT_FOUND', detail);
  }
}

export class DeadlineExceeded extends Failure {
  override readonly name = 'DeadlineExceeded';
  constructor(detail?: string) {
    super('DEADLINE_EXCEEDED', detail);
  }
}
