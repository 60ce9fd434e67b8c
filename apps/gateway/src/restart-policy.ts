export interface RestartPolicyOptions {
  /** Wait before replacing a process after the first death, doubled at each death after. */
  firstDelayMs: number;
  /** The longest wait. */
  maxDelayMs: number;
  /** A process that ran this long before dying was healthy: the wait starts over from firstDelayMs. */
  stableAfterMs: number;
  /** Deaths in a row before listening after which the supervisor stops trying. */
  maxStartFailures: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicyOptions = {
  firstDelayMs: 100,
  maxDelayMs: 10_000,
  stableAfterMs: 30_000,
  maxStartFailures: 5,
};

export type RestartDecision = { restartInMs: number } | { giveUp: true; startFailures: number };

/**
 * When the supervisor of GATEWAY_WORKERS replaces a gateway process that died: after a wait doubling from
 * 100 ms to 10 s, so a process that crashes at once does not make the supervisor fork in a tight loop
 * (each fork loads the whole app, on the cores the other processes serve from). One policy for all the
 * processes: they run the same code in the same environment, so what kills one kills the next.
 *
 * A process that dies before it ever listened points at the environment (its port taken, a bad
 * configuration, a dependency missing), which a replacement will not fix: after 5 in a row the
 * supervisor gives up, so that the orchestrator sees the failure instead of a gateway that never serves.
 */
export class RestartPolicy {
  private nextDelayMs: number;
  private startFailures = 0;

  constructor(private readonly options: RestartPolicyOptions = DEFAULT_RESTART_POLICY) {
    this.nextDelayMs = options.firstDelayMs;
  }

  /** A gateway process died without being asked to stop: when to start another, or to give up. */
  afterDeath(death: { listened: boolean; upMs: number }): RestartDecision {
    this.startFailures = death.listened ? 0 : this.startFailures + 1;
    if (this.startFailures >= this.options.maxStartFailures) return { giveUp: true, startFailures: this.startFailures };
    if (death.upMs >= this.options.stableAfterMs) this.nextDelayMs = this.options.firstDelayMs;
    const restartInMs = this.nextDelayMs;
    this.nextDelayMs = Math.min(this.nextDelayMs * 2, this.options.maxDelayMs);
    return { restartInMs };
  }
}
