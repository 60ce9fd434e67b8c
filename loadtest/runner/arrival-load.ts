import { createHttpClient } from '@flashsale/harness';
import { rateAt, durationOf, outcomeOf, OUTCOMES, type Outcome, type Shape } from '../k6/lib/shapes.js';

export interface Purchase {
  saleId: number;
  userId: string;
  token: string;
}

export interface LoadProgress {
  elapsedSeconds: number;
  sent: number;
  inFlight: number;
  dropped: number;
  outcomes: Record<Outcome, number>;
}

export interface LoadOutcome extends LoadProgress {
  /** Latency of every answered purchase, ms. */
  latencies: number[];
  /** Reservation id -> buyer and quantity, for every 202. */
  accepted: Map<string, { userId: string; quantity: number }>;
  /** Answers by status code. */
  statuses: Record<string, number>;
}

const TICK_MS = 10;

/**
 * Plays a shape as k6's arrival-rate executors do: purchases start at the shape's rate whatever the
 * latency of the answers (an open model, as a real crowd is), over `maxInFlight` keep-alive connections
 * (the harness's HTTP client), and an arrival that finds every connection busy is dropped and counted,
 * like k6's dropped iterations. `next(i)` says who buys what for the i-th arrival.
 */
export async function playArrivals(
  baseUrl: string,
  shape: Shape,
  next: (i: number) => Purchase,
  onProgress?: (progress: LoadProgress) => void,
): Promise<LoadOutcome> {
  const client = createHttpClient(baseUrl, shape.maxInFlight);
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  const state: LoadOutcome = {
    elapsedSeconds: 0,
    sent: 0,
    inFlight: 0,
    dropped: 0,
    outcomes,
    latencies: [],
    accepted: new Map(),
    statuses: {},
  };
  const pending = new Set<Promise<void>>();

  const fire = (purchase: Purchase) => {
    state.sent += 1;
    state.inFlight += 1;
    const request = client
      .send('POST', `/api/sales/${purchase.saleId}/purchase`, {
        headers: { authorization: `Bearer ${purchase.token}` },
        body: { quantity: 1 },
      })
      .then(({ status, body, latencyMs }) => {
        state.latencies.push(latencyMs);
        state.statuses[status] = (state.statuses[status] ?? 0) + 1;
        outcomes[outcomeOf(status, body.code as string | undefined)] += 1;
        if (status === 202) state.accepted.set(body.reservationId as string, { userId: purchase.userId, quantity: 1 });
      })
      .catch(() => {
        state.statuses.transport = (state.statuses.transport ?? 0) + 1;
        outcomes.error += 1;
      })
      .finally(() => {
        state.inFlight -= 1;
        pending.delete(request);
      });
    pending.add(request);
  };

  const duration = durationOf(shape);
  const started = performance.now();
  let due = 0;
  let arrivals = 0;
  let lastReport = 0;
  let lastTick = 0;
  for (;;) {
    const t = (performance.now() - started) / 1000;
    if (t >= duration) break;
    // The arrivals of the time that really passed since the last tick, not of one TICK_MS: on a busy
    // machine the timer fires late, and counting a tick as TICK_MS would play a fraction of the shape.
    due += rateAt(shape, t) * (t - lastTick);
    lastTick = t;
    while (due >= 1) {
      due -= 1;
      if (state.inFlight >= shape.maxInFlight) state.dropped += 1;
      else fire(next(arrivals));
      arrivals += 1;
    }
    state.elapsedSeconds = t;
    if (onProgress && t - lastReport >= 1) {
      lastReport = t;
      onProgress(state);
    }
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
  }
  await Promise.all(pending);
  state.elapsedSeconds = (performance.now() - started) / 1000;
  client.close();
  return state;
}
