import type { Logger } from 'pino';

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits 0. A second signal while stopping exits 1 at once, so
 * an operator is never stuck behind a hung shutdown; so does `timeoutMs` (SHUTDOWN_TIMEOUT_MS) passing
 * before `stop` has finished, so an orchestrator is not either: a client holding a request open, a store
 * that does not answer, must not keep the process from going.
 */
export function onShutdownSignal(logger: Logger, timeoutMs: number, stop: () => Promise<void>): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal while stopping, exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'stopping');
    // Unref'd: the deadline itself holds nothing open; it only cuts short what something else holds.
    setTimeout(() => {
      logger.error({ timeoutMs }, 'still stopping at the shutdown deadline (SHUTDOWN_TIMEOUT_MS), exiting now');
      process.exit(1);
    }, timeoutMs).unref();
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
