import type { AdminSession } from '@flashsale/sales';

/**
 * The live streams' session checks (dashboard.route.ts), one Redis read per session at a time: a check
 * asked for while another of the same session is on its way shares it, so a tick's events for the four
 * streams of one page's session cost one read, not one per event. A shared read started at most one
 * round trip before the event it vouches for; a sign-out on this process ends the streams at once
 * anyway (LiveStreams.endSession).
 */
export class SessionChecks {
  private readonly inFlight = new Map<string, Promise<AdminSession | null | undefined>>();

  /** `read` answers the session, null when it is gone; a failed read counts as not vouched for. */
  constructor(private readonly read: (sessionId: string) => Promise<AdminSession | null>) {}

  /** The session as Redis holds it now, null when it is gone, undefined when Redis did not answer. */
  check(sessionId: string): Promise<AdminSession | null | undefined> {
    let check = this.inFlight.get(sessionId);
    if (!check) {
      check = this.read(sessionId)
        .catch(() => undefined)
        .finally(() => this.inFlight.delete(sessionId));
      this.inFlight.set(sessionId, check);
    }
    return check;
  }
}
