import type { WatchedSale } from '@flashsale/order-store';

/** A watched sale as MySQL lists it, for the reconciler's pure tests: live, settled, no checkpoint unless given. */
export function watchedSale(overrides: Partial<WatchedSale> = {}): WatchedSale {
  return {
    id: 1,
    name: 's',
    stock: 10,
    perUserLimit: 1,
    startsAt: 0,
    endsAt: 1e13,
    soldUnits: 0,
    generation: 'g1',
    lostReservations: 0,
    lostUnits: 0,
    paymentWindowSeconds: 900,
    createdAt: 0,
    checkpoint: null,
    settled: true,
    operatorPausedAt: null,
    operatorPaused: false,
    controlsVersion: 0,
    rebuyRule: { maxOrdersPerBuyer: 3, rebuyCooldownSeconds: 30 },
    ...overrides,
  };
}
