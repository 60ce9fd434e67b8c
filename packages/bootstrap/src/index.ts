export { bootProcess, serveInternalPort, announceStarted, type ProcessBoot, type InternalPort } from './process-boot.ts';
export {
  openStores,
  openCommandStores,
  storesReadiness,
  serveStoresPort,
  type CommandStores,
  type ProcessStores,
  type GatewayStores,
  type ReconcilerStores,
  type WorkerStores,
} from './process-stores.ts';
export { stopOnSignal, type ProcessStop } from './process-stop.ts';
export { salesOf, salesOptionsOf } from './process-sales.ts';
export {
  listenForWorkSignals,
  saleEventsSubscription,
  bullConnectionOf,
  queueCountsOf,
  type SaleEventsSubscription,
} from './subscriptions.ts';
