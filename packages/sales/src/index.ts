export { createDoor, type Door, type DoorDeps, type QueueReply } from './admission.ts';
export { DoorFrontiers } from './door-frontier.ts';
export { LOSSES_PAGE, readSaleLosses, type SaleLossesPage } from './sale-losses.ts';
export { restoreBuyerHistory, type BuyerHistoryDeps } from './buyer-history.ts';
