export { loadConfig, ConfigError, DEV_ADMIN_TOKEN, DEV_AUTH_SECRET, type Config } from './config.ts';
export { createLogger, type Logger } from './logger.ts';
export { onShutdownSignal } from './lifecycle.ts';
export { serveMetrics, type MetricsSource } from './metrics-server.ts';
