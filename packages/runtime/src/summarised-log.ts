import type { Logger } from './logger.ts';

/** How often a summary is written at most, by default: a flood must not become a flood of log lines. */
export const SUMMARY_EVERY_MS = 10_000;

/**
 * Notes one event of a kind (`reason`), with what the log should keep of the latest (`last`: an address,
 * an error): see summarisedLog.
 */
export type SummarisedLog<Reason extends string> = (reason: Reason, last?: Record<string, unknown>) => void;

/**
 * A warn line that sums up events instead of writing one per event: the first is logged at once, then
 * the counts by reason at most every `everyMs` while they go on, with the latest of each `last` field. An
 * operator learns a limit is hit or a flood is on (and from where) without the flood filling the disk:
 * whatever the rate, this writes at most one line per interval. The counts go under `field`.
 */
export function summarisedLog<Reason extends string>(
  logger: Logger,
  message: string,
  field: string,
  everyMs = SUMMARY_EVERY_MS,
): SummarisedLog<Reason> {
  let counts: Partial<Record<Reason, number>> = {};
  let last: Record<string, unknown> = {};
  let window: NodeJS.Timeout | undefined;
  const flush = () => {
    window = undefined;
    if (Object.keys(counts).length === 0) return;
    logger.warn({ [field]: counts, ...last }, message);
    counts = {};
    last = {};
    window = setTimeout(flush, everyMs).unref();
  };
  return (reason, latest) => {
    counts[reason] = (counts[reason] ?? 0) + 1;
    if (latest) Object.assign(last, latest);
    if (window === undefined) flush();
  };
}
