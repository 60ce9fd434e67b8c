import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@flashsale/config';
import { createReconcileJobs } from '@flashsale/jobs';
import { createApp } from '../../apps/gateway/src/app.ts';
import type { TestContext } from './context.ts';

/** The gateway app of a context, listening on a free port. */
export async function startGateway(ctx: TestContext): Promise<{ url: string; close(): Promise<void> }> {
  const logger = createLogger('gateway-test', 'silent');
  const jobs = createReconcileJobs(ctx.config.REDIS_URL, ctx.config.REDIS_PREFIX);
  const server: Server = createServer(createApp({ config: ctx.config, redis: ctx.redis, prisma: ctx.prisma, logger, jobs }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => void jobs.close().then(resolve));
        server.closeAllConnections();
      }),
  };
}
