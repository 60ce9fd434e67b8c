/** A step of the watch that did not finish within its deadline (see withinDeadline). */
export class WatchStepOverdueError extends Error {
  override readonly name = 'WatchStepOverdueError';

  constructor(
    readonly step: string,
    readonly deadlineMs: number,
  ) {
    super(`watch step overdue: ${step} did not finish within ${deadlineMs} ms`);
  }
}

/**
 * Runs one step of the watch (a look at a sale, the list of sales, a retirement round) within
 * `deadlineMs`. The watch is one loop over every sale: a step that waits without end (a Redis Cluster
 * command queued while no node serves its slot, a connection to a frozen server, a MySQL statement on
 * a stuck connection) would stop every later look with it, silently. Past the deadline the step fails
 * with WatchStepOverdueError and the loop goes on; the step's own work cannot be cancelled, so it is
 * told by `signal`, and checks it before anything it writes (a checkpoint, a reconcile request, a
 * trim), so a late step never writes what a newer look may have superseded.
 */
export async function withinDeadline<T>(step: string, deadlineMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new WatchStepOverdueError(step, deadlineMs);
      controller.abort(error);
      reject(error);
    }, deadlineMs);
  });
  try {
    return await Promise.race([work(controller.signal), overdue]);
  } finally {
    clearTimeout(timer);
  }
}
