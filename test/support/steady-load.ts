import { setTimeout as sleep } from 'node:timers/promises';
import { mergeBursts, purchaseBurst, type BurstOutcome } from '@flashsale/harness';
import type { SaleStore } from '@flashsale/redis-store';

/** Buyers that keep coming to some sales until stopped: what a fault meets in a sale that is selling. */
export interface SteadyLoad {
  /** 202s so far, per sale. */
  accepted(saleId: number): number;
  /** Stops sending, waits for the answers in hand, and returns every outcome per sale. */
  stop(): Promise<Map<number, BurstOutcome>>;
}

/**
 * Sends fresh buyers to every sale, `perChunk` at a time through the gateways in turn, at most one chunk
 * per `chunkMs` per sale (a pace, not a verdict: it keeps a sale from selling out before the fault).
 */
export function steadyLoad(gatewayUrls: string[], saleIds: number[], label: string, { perChunk = 8, chunkMs = 100 } = {}): SteadyLoad {
  let stopped = false;
  const outcomes = new Map<number, BurstOutcome[]>(saleIds.map((id) => [id, []]));
  const acceptedSoFar = new Map<number, number>(saleIds.map((id) => [id, 0]));
  let next = 0;
  const loops = saleIds.map(async (saleId) => {
    for (let chunk = 0; !stopped; chunk++) {
      const started = performance.now();
      const buyers = Array.from({ length: perChunk }, (_, i) => `s${saleId}-${label}-${chunk}-${i}`);
      const outcome = await purchaseBurst(() => gatewayUrls[next++ % gatewayUrls.length]!, saleId, buyers, { connections: 2 });
      outcomes.get(saleId)!.push(outcome);
      acceptedSoFar.set(saleId, acceptedSoFar.get(saleId)! + outcome.accepted.size);
      const rest = chunkMs - (performance.now() - started);
      if (rest > 0) await sleep(rest);
    }
  });
  return {
    accepted: (saleId) => acceptedSoFar.get(saleId) ?? 0,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return new Map(saleIds.map((id) => [id, mergeBursts(...outcomes.get(id)!)]));
    },
  };
}

/** How long each sale was seen paused, at the longest, by a watcher that reads its meta every 100 ms. */
export interface PauseWatch {
  /** The longest pause seen per sale, in ms (a pause still running counts up to now). */
  longest(): Map<number, number>;
  stop(): Promise<void>;
}

/**
 * Reads every sale's paused flag from its master every 100 ms. A read that hangs (its master frozen)
 * holds that sale's watch until it is answered; a read that fails is skipped. The measure is of what the
 * buyers meet (503 SALE_PAUSED), within a read's time.
 */
export function watchPauses(store: SaleStore, saleIds: number[]): PauseWatch {
  let stopped = false;
  const since = new Map<number, number>();
  const longest = new Map<number, number>(saleIds.map((id) => [id, 0]));
  const note = (saleId: number, at: number) => {
    const from = since.get(saleId);
    if (from !== undefined) longest.set(saleId, Math.max(longest.get(saleId)!, at - from));
  };
  const loops = saleIds.map(async (saleId) => {
    while (!stopped) {
      const paused = await store
        .sale(saleId)
        .state()
        .then(
          (state) => state?.paused ?? false,
          () => undefined,
        );
      const at = performance.now();
      if (paused === true && !since.has(saleId)) since.set(saleId, at);
      if (paused === false) {
        note(saleId, at);
        since.delete(saleId);
      }
      await sleep(100);
    }
  });
  return {
    longest() {
      const now = performance.now();
      const result = new Map(longest);
      for (const [saleId, from] of since) result.set(saleId, Math.max(result.get(saleId)!, now - from));
      return result;
    },
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}
