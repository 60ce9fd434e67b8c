import type { DoorView, DoorTerms, SaleDefinition, SaleStatus } from '@flashsale/domain';

/** A sale as the HTTP API shows it; `live` adds what only a running sale has. */
export function saleView(sale: SaleDefinition, live?: { remaining: number; status: SaleStatus }) {
  return {
    id: sale.id,
    name: sale.name,
    stock: sale.stock,
    ...(live && { remaining: live.remaining }),
    startsAt: new Date(sale.startsAt).toISOString(),
    endsAt: new Date(sale.endsAt).toISOString(),
    perUserLimit: sale.perUserLimit,
    ...(live && { status: live.status }),
  };
}

/** What of a queued sale's admission the API shows, in this order: named, so that a field added to DoorTerms is shown only once listed here. */
const ADMISSION_FIELDS = [
  'mode',
  'preQueueSeconds',
  'admitPerSecond',
  'admissionTtlSeconds',
  'noShowFactor',
  'paused',
  'showUpSeconds',
  'challenge',
  'challengeMaxNumber',
  'requireClaim',
  'maxQueueSize',
] as const satisfies readonly (keyof DoorTerms)[];

/** A queued sale's admission settings as the API shows them (an open sale shows none). */
export function admissionView(admission: DoorTerms | undefined) {
  if (!admission) return { mode: 'open' as const };
  return Object.fromEntries(ADMISSION_FIELDS.map((field) => [field, admission[field]])) as Pick<
    DoorTerms,
    (typeof ADMISSION_FIELDS)[number]
  >;
}

/** The door of a queued sale as the operator sees it. */
export function doorView(door: DoorView) {
  const waiting = Math.max(0, door.queued - door.front);
  return {
    queued: door.queued,
    waiting,
    admitted: door.front,
    admittedUnused: door.unused,
    awaitingShowUp: door.awaitingShowUp,
    noShowRate: door.noShowRate,
    abandoned: door.abandoned,
    remaining: door.remaining,
    mayComeBack: door.mayComeBack,
    // The last in line, at the door's pace; null while nothing moves it (paused, or no stock on sale).
    lastInLineEtaSeconds:
      door.doorPaused || door.salePaused || door.remaining <= 0 || waiting === 0 ? null : Math.ceil(waiting / door.admitPerSecond),
    at: new Date(door.now).toISOString(),
  };
}
