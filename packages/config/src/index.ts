export { loadConfig, ConfigError, DEV_ADMIN_TOKEN, DEV_AUTH_SECRET, DEV_PAYMENT_WEBHOOK_SECRET, type Config } from './config.ts';
export { createLogger, type Logger } from './logger.ts';
export { onShutdownSignal } from './lifecycle.ts';
export { serveMetrics, serveMetricsPort, readinessProbe, type MetricsListener, type MetricsListenerConfig, type MetricsSource, type Readiness, type ReadinessChecks } from './metrics-server.ts';
export { capConnections, type ConnectionRefusal } from './connection-cap.ts';
export { summarisedLog, type SummarisedLog } from './summarised-log.ts';
export { createStoreErrorMetrics, type StoreErrorMetrics, type StoreErrorClassifiers } from './store-error-metrics.ts';
export { parseCommandLine, readCommandLine, exitWithUsage, UsageError, type CommandSpec } from './command-line.ts';
