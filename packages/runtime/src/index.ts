export { createLogger, type Logger } from './logger.ts';
export { onShutdownSignal } from './shutdown-signals.ts';
export {
  serveMetrics,
  serveMetricsPort,
  readinessProbe,
  type MetricsListener,
  type MetricsListenerConfig,
  type MetricsSource,
  type Readiness,
  type ReadinessChecks,
} from './metrics-server.ts';
export { capConnections, type ConnectionRefusal } from './connection-cap.ts';
export { summarisedLog, type SummarisedLog } from './summarised-log.ts';
export { createStoreErrorMetrics, type StoreErrorMetrics, type StoreErrorClassifiers } from './store-error-metrics.ts';
export { HotPathCounter, HotPathHistogram } from './hot-path-metrics.ts';
export { metricsOn, type Collect } from './metric-definitions.ts';
