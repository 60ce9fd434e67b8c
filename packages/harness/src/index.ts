// Tools for driving the real system from outside: the tests, the demo and the load and chaos runners.
export {
  spawnApp,
  spawnGateway,
  spawnWorker,
  spawnReconciler,
  redisEnvOf,
  SOURCE_NODE_ARGS,
  LOG_WAIT_MS,
  type AppProcess,
  type AppSource,
  type LogWait,
} from './processes.ts';
export { spawnInGroup, signalGroup, killGroup, killAllGroups } from './process-group.ts';
export {
  TEST_RUN_VARIABLE,
  testRunId,
  newTestRunId,
  testRedisPrefix,
  testRedisPattern,
  testDatabaseName,
  testDatabasePattern,
} from './test-run.ts';
export { createHttpClient, mapConcurrently, percentile, type HttpClient, type HttpResult } from './http-client.ts';
export {
  ledgerOf,
  faultLedgerOf,
  compareLedger,
  compareFaultLedger,
  ordersOf,
  pendingCount,
  type Ledger,
  type FaultLedger,
  type LedgerOrder,
} from './ledger.ts';
export { startFaultProxy, type FaultProxy, type LinkFault } from './fault-proxy.ts';
export {
  runMatrixCell,
  matrixTable,
  MATRIX_FAULTS,
  MATRIX_LINKS,
  MATRIX_SALES,
  FAULT_MEANING,
  type MatrixCell,
  type CellResult,
  type MatrixStores,
  type MatrixFault,
  type MatrixLink,
  type MatrixSale,
} from './fault-matrix.ts';
export { buyerToken, signBuyerTokens } from './tokens.ts';
export { startRedisServer, askRedis, type RedisServer, type RedisServerOptions } from './redis-server.ts';
export { freePort } from './server-start.ts';
export { tcpPortsByProcess, tcpPortsOfGroup } from './process-sockets.ts';
export { purchaseBurst, mergeBursts, type BurstOutcome } from './purchase-burst.ts';
export { startMariaDbServer, type MariaDbServer } from './mariadb-server.ts';
export { startGaleraCluster, type GaleraCluster, type GaleraNode, type GaleraClusterOptions } from './galera-cluster.ts';
export { skewedClockEnv } from './skewed-clock.ts';
export { startRedisCluster, type RedisCluster, type ClusterNode } from './redis-cluster.ts';
export { startRedisSentinels, type RedisSentinels, type SentinelProcess, type RedisSentinelOptions } from './redis-sentinel.ts';
export { gitRevision } from './git-revision.ts';
export { paymentEventRequest, type PaymentSucceeded } from './payment-events.ts';
export { solveDoorChallenge, type DoorChallenge } from './door-challenge-solver.ts';
export { launchChromium, signInToDashboard } from './chromium.ts';
export { findLeftovers, removeLeftovers, describeLeftovers, isClean, processesOfRun, type Leftovers } from './leftovers.ts';
