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

/** The subclass of one code, named after it (SALE_LOCK_BUSY: SaleLockBusy) for stack traces and logs. */
function failureOf(code: FailureCode) {
  const name = code.toLowerCase().replace(/(?:^|_)([a-z])/g, (_, letter: string) => letter.toUpperCase());
  const Kind = class extends Failure {
    constructor(detail?: string) {
      super(code, detail);
      this.name = name;
    }
  };
  Object.defineProperty(Kind, 'name', { value: name });
  return Kind;
}

export const SaleLockBusy = failureOf('SALE_LOCK_BUSY');
export const DrainTimeout = failureOf('DRAIN_TIMEOUT');
export const SaleNotFound = failureOf('SALE_NOT_FOUND');
export const DeadlineExceeded = failureOf('DEADLINE_EXCEEDED');

/**
 * Settles with `promise`, or fails with DeadlineExceeded after `ms`. For calls that have no deadline of
 * their own (BullMQ's connections wait for Redis on purpose); the call itself goes on and is ignored.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
