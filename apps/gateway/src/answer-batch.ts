import type { ServerResponse } from 'node:http';
import { sendRendered, type RenderedAnswer } from './problem.ts';

/**
 * The crowd's answers (purchase and queue poll: routes/crowd-routes.ts), written together once the event
 * loop has read every request that arrived with them, instead of one by one between those reads.
 *
 * Why: an answer written while the loop is still taking requests off other sockets costs the gateway far
 * more system time than the same answer written after them. Profiled on a sold-out sale (answered
 * from memory) with each answer written in the same callback that read its request, the gateway spent
 * 53 % of its CPU in the socket write, 33 us per answer; written from one `setImmediate` after the poll
 * phase, the same answers cost 22-36 us per request in all and the gateway answered 1.6-2.3 times as
 * many (CHANGELOG.md, "The crowd's answers written after the loop's reads"). Answers that wait on Redis gain less:
 * the replies of one read from Redis already resolve together.
 *
 * The wait is the rest of the current loop turn (the check phase), not a timer: no answer is held
 * longer than the reads it comes after. An answer whose request has been answered meanwhile (the request
 * deadline) is dropped, as `sendRendered` does.
 */
const pending: { res: ServerResponse; answer: RenderedAnswer }[] = [];

function writePending(): void {
  // Answers queued while writing (none today: writing runs no handler) go out in this pass too.
  for (let i = 0; i < pending.length; i += 1) {
    const { res, answer } = pending[i]!;
    sendRendered(res, answer);
  }
  pending.length = 0;
}

/** Writes `answer` on `res` after the requests the loop is reading now, in this loop turn. */
export function sendAfterReads(res: ServerResponse, answer: RenderedAnswer): void {
  if (pending.push({ res, answer }) === 1) setImmediate(writePending);
}
