import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, type Logger } from '@flashsale/runtime';
import { createReconcileJobs } from '@flashsale/jobs';
import { createPrisma } from '@flashsale/order-store';
import { salesOf, storesReadiness } from '@flashsale/bootstrap';
import { createGateway, type Gateway } from '../../apps/gateway/src/gateway.ts';
import { afterAll, beforeAll } from 'vitest';
import { createIsolatedContext, createTestContext, type TestContext } from './context.ts';

/**
 * The gateway of a context, listening on a free port, built exactly as `main.ts` builds it (purchase route,
 * verdict cache with its sale events subscription, live-sale directory).
 */
export interface TestGateway {
  url: string;
  gateway: Gateway;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  /** The gateway's monotonic clock (rate-limit windows, verdict TTL), default the real one; see clock.ts. */
  now?: () => number;
  /** The gateway's logger, default a silent one; a test that reads the log passes one writing to an array. */
  logger?: Logger;
}

/** The gateway of `ctx`, configured by `ctx.config` (a test changes a setting with a context of its own). */
export async function startGateway(
  ctx: TestContext,
  { now, logger = createLogger('gateway-test', 'silent') }: TestGatewayOptions = {},
): Promise<TestGateway> {
  const jobs = createReconcileJobs(ctx.config.REDIS_URL, ctx.config.REDIS_PREFIX);
  // The dashboard's pool of its own, as the gateway process has it (openStores).
  const dashboardPrisma = createPrisma(ctx.config.DATABASE_URL, ctx.config.DASHBOARD_DB_POOL_SIZE);
  const stores = { redis: ctx.redis, prisma: ctx.prisma, jobs };
  const gateway = createGateway({
    config: ctx.config,
    sales: salesOf(ctx.config, logger, stores),
    dashboardSales: salesOf(ctx.config, logger, { ...stores, prisma: dashboardPrisma }),
    logger,
    readiness: storesReadiness(stores),
    now,
  });
  await gateway.start();
  const server: Server = createServer(gateway.listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    gateway,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(
          () =>
            void Promise.all([jobs.close(), gateway.close()])
              .then(() => dashboardPrisma.$disconnect())
              .then(() => resolve()),
        );
        server.closeAllConnections();
      }),
  };
}

/**
 * One context and one gateway for a whole test file: started before its first test (then `onStarted`
 * runs, to keep them and set up what the file shares), closed after its last. `env` is the context's
 * configuration beyond the defaults.
 */
export function gatewayPerFile(
  onStarted: (ctx: TestContext, gateway: TestGateway) => void | Promise<void>,
  { env, isolated = false, ...options }: TestGatewayOptions & { env?: NodeJS.ProcessEnv; isolated?: boolean } = {},
): void {
  let started: { ctx: TestContext; gateway: TestGateway } | undefined;
  beforeAll(async () => {
    // isolated: a database of the file's own (createIsolatedContext), for what reads every sale in MySQL.
    const ctx = isolated ? await createIsolatedContext(env) : createTestContext(env);
    started = { ctx, gateway: await startGateway(ctx, options) };
    await onStarted(started.ctx, started.gateway);
  });
  afterAll(async () => {
    await started?.gateway.close();
    await started?.ctx.close();
  });
}
