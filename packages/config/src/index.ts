export {
  loadConfig,
  loadConfigOrExit,
  ConfigError,
  DEV_ADMIN_TOKEN,
  DEV_AUTH_SECRET,
  DEV_PAYMENT_WEBHOOK_SECRET,
  type Config,
} from './config.ts';
export { parseCommandLine, readCommandLine, exitWithUsage, UsageError, type CommandSpec } from './command-line.ts';
