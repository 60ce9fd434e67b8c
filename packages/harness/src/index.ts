// Tools for driving the real system from outside: the tests, the demo and the load and chaos runners.
export { spawnApp, spawnGateway, spawnWorker, type AppProcess } from './processes.ts';
export { createHttpClient, mapConcurrently, percentile, type HttpResult } from './http-client.ts';
export { ledgerOf, ordersOf, pendingCount, waitForDrain, type Ledger } from './ledger.ts';
export { startFaultProxy, type FaultProxy } from './fault-proxy.ts';
export { buyerToken } from './tokens.ts';
