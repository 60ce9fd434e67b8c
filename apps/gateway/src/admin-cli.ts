import { AppError, MAX_STOCK, parseSaleId, saleIdOfReservation, type SaleControl } from '@flashsale/domain';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { createLogger } from '@flashsale/runtime';
import { openCommandStores } from '@flashsale/bootstrap';
import { LOSSES_PAGE, storeFailures } from '@flashsale/sales';

/**
 * npm run admin -- <pause|resume|close|list|losses> [--sale <id>] [--add <units>] [--limit <n>] [--cursor <c>]
 *                  stock --sale <id> --add <units>
 *
 * The operator's controls from a shell. It calls the module the admin API calls (runSaleControl), with
 * the configuration of the environment (DATABASE_URL, REDIS_URL, REDIS_PREFIX), not the gateway over
 * HTTP: it works while no gateway answers (pausing a sale during a gateway incident is when it is
 * needed), needs no admin token on the command line, and cannot differ from the API in what a control
 * does. Prints the sale (or the page) as JSON; exit 1 with the error's code when the control is refused
 * or fails, 2 for a command line that is not valid.
 */
const COMMAND = {
  usage: `usage: npm run admin -- pause|resume|close --sale <id>
       npm run admin -- stock --sale <id> --add <units>
       npm run admin -- list [--limit <n>] [--cursor <c>]
       npm run admin -- losses --sale <id> [--limit <n>] [--cursor <c>]

The operator's controls, run against DATABASE_URL and REDIS_URL directly (no gateway needed); prints
the sale, or a page of sales, as JSON. Exit 1 with the error's code when a control is refused, or
SERVICE_UNAVAILABLE naming the store that did not answer.

  pause | resume | close   the operator's pause, its resume, or closing the sale for good
  stock --add <units>      adds units to the sale's stock
  list                     the sales, newest first: --limit (default 20, at most 100) a page,
                           --cursor the nextCursor of the previous page
  losses                   the reservations answered 202 that no store holds any more: the count
                           (named and unnamed), the named ones with their buyers a page at a time
                           (--limit, default ${LOSSES_PAGE.default}, at most ${LOSSES_PAGE.max}; --cursor the
                           nextCursor of the previous page), and the payments that matched nothing
  --sale <id>              the sale a control applies to`,
  options: { sale: { type: 'string' }, add: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' } },
  allowPositionals: true,
} as const;

function usage(problem: string): never {
  exitWithUsage(COMMAND, problem);
}

function wholeNumber(raw: string | undefined, name: string, max: number): number {
  if (raw === undefined) usage(`--${name} is required`);
  const value = /^[1-9][0-9]*$/.test(raw) ? Number(raw) : NaN;
  if (!(value <= max)) usage(`--${name} must be a whole number from 1 to ${max}, not ${raw}`);
  return value;
}

const { positionals, values } = parseCommandLine(COMMAND);
const [command, ...extra] = positionals;
if (extra.length > 0) usage(`unexpected arguments: ${extra.join(' ')}`);

const CONTROLS: Record<string, () => SaleControl> = {
  pause: () => ({ action: 'pause' }),
  resume: () => ({ action: 'resume' }),
  close: () => ({ action: 'close' }),
  stock: () => ({ action: 'add_stock', units: wholeNumber(values.add, 'add', MAX_STOCK) }),
};
if (command !== 'list' && command !== 'losses' && !(command !== undefined && command in CONTROLS))
  usage(command === undefined ? 'no command given' : `unknown command: ${command}`);
// The whole command line is judged before the configuration is read or a store is asked.
const saleOption = () => parseSaleId(values.sale ?? '') ?? usage(`--sale must be a sale id, not ${values.sale ?? 'missing'}`);
const page =
  command === 'list'
    ? {
        limit: values.limit === undefined ? 20 : wholeNumber(values.limit, 'limit', 100),
        cursor: values.cursor === undefined ? undefined : wholeNumber(values.cursor, 'cursor', Number.MAX_SAFE_INTEGER),
      }
    : undefined;
const losses = command === 'losses' ? lossesPage(saleOption()) : undefined;
const control = command === 'list' || command === 'losses' ? undefined : { saleId: saleOption(), action: CONTROLS[command]!() };

function lossesPage(saleId: number): { saleId: number; limit: number; cursor?: string } {
  const limit = values.limit === undefined ? LOSSES_PAGE.default : wholeNumber(values.limit, 'limit', LOSSES_PAGE.max);
  const cursor = values.cursor;
  if (cursor !== undefined && saleIdOfReservation(cursor) !== saleId)
    usage(`--cursor must be the nextCursor of a previous page of sale ${saleId}, not ${cursor}`);
  return { saleId, limit, ...(cursor !== undefined && { cursor }) };
}

const config = loadConfig();
const logger = createLogger('admin-cli', config.LOG_LEVEL, { stream: 2 });
const stores = openCommandStores(config, logger, { name: 'admin-cli', poolSize: 2 });
const { sales } = stores;
let exitCode = 0;
try {
  const result = control
    ? await sales.runSaleControl(control.saleId, control.action, 'cli')
    : losses
      ? await sales.readSaleLosses(losses.saleId, losses)
      : await sales.listAdminSales(page!);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} catch (error) {
  exitCode = 1;
  process.stderr.write(`${failureLine(error)}\n`);
} finally {
  await stores.close();
}
process.exit(exitCode);

/**
 * The line an operator reads when the command fails: the refusal's code, or which store did not answer
 * (ioredis's and the driver's own words alone, "Command timed out", name neither). A control writes MySQL
 * first and then Redis, and the reconciler's watch carries to Redis any control MySQL holds and Redis
 * lacks: the same command again is safe either way.
 */
function failureLine(error: unknown): string {
  const message = (error as Error).message;
  if (error instanceof AppError) return `${error.code}: ${message}`;
  if (storeFailures.isRedisUnavailable(error)) {
    return `SERVICE_UNAVAILABLE: Redis did not answer (${message}); a control MySQL recorded reaches Redis through the reconciler once Redis answers, and the same command again is safe`;
  }
  if (storeFailures.isMysqlUnavailable(error))
    return `SERVICE_UNAVAILABLE: MySQL did not answer (${message}); the same command again is safe`;
  return `failed: ${message}`;
}
