/**
 * `npm run bench:profile [-- accept|sold_out|duplicate]`: the gateway under the benchmark's load with
 * `node --cpu-prof`, then the functions and packages that took the most CPU (self time). The .cpuprofile
 * stays in the printed directory for Chrome DevTools.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '@flashsale/config';
import { createRedis, publishSale, saleKeys } from '@flashsale/redis-store';
import { createPrisma, insertSale } from '@flashsale/order-store';
import { newReservationId } from '@flashsale/domain';
import { signBuyerTokens } from '@flashsale/harness';
import { purchaseLoad } from './load.ts';
import { startGatewayProcess } from './servers.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

const path = process.argv[2] ?? 'accept';
const config = loadConfig();
const prefix = `profile-${randomBytes(3).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'gateway-profile-'));
const redis = createRedis(config.REDIS_URL);
const prisma = createPrisma(config.DATABASE_URL, 2);
const ids = Array.from({ length: 100_000 }, (_, i) => `profile-buyer-${i}`);
const tokens = signBuyerTokens(ids, { secret: config.AUTH_SECRET });
const sale = await insertSale(prisma, { name: 'profile', stock: path === 'sold_out' ? 1 : 10_000_000, perUserLimit: 1, startsAt: new Date(Date.now() - 1000), endsAt: new Date(Date.now() + 3_600_000) });
await publishSale(redis, prefix, sale, sale.generation);
const keys = saleKeys(prefix, sale.id);
const prebuy = path === 'sold_out' ? ['someone'] : path === 'duplicate' ? ids.slice(0, 20_000) : [];
for (const buyer of prebuy) await redis.reserve(keys.meta, keys.buyers, keys.stream, buyer, 1, newReservationId(sale.id));

const gateway = await startGatewayProcess({ REDIS_PREFIX: prefix, DATABASE_URL: config.DATABASE_URL, REDIS_URL: config.REDIS_URL }, 1, `--cpu-prof --cpu-prof-dir=${dir}`);
const buyers = (path === 'duplicate' ? ids.slice(0, 20_000) : ids).map((id, i) => ({ id, token: tokens[i]! }));
const result = await purchaseLoad({ url: gateway.url, saleId: sale.id, buyers, connections: 64, seconds: 5 });
console.log(`${path}: ${Math.round(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, ${JSON.stringify(result.statuses)}`);
await gateway.stop();
await redis.del(keys.meta, keys.buyers, keys.stream);
await redis.quit();
await prisma.$disconnect();

const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
if (!file) throw new Error(`no profile written in ${dir}`);
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
const byFunction = new Map<string, number>();
const byArea = new Map<string, number>();
for (const sample of profile.samples) {
  const { functionName, url, lineNumber } = byNode.get(sample)!.callFrame;
  const area = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url.startsWith('node:') ? 'node core' : url.includes('/work/') || url.includes('file:') ? 'project code' : functionName || '(native)');
  const key = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + 1);
  byArea.set(area, (byArea.get(area) ?? 0) + 1);
}
const top = (map: Map<string, number>, n: number) =>
  [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, count]) => `${((100 * count) / profile.samples.length).toFixed(1).padStart(5)}%  ${name}`);
console.log(`\nprofile: ${join(dir, file)}\n\nself time by area:\n${top(byArea, 12).join('\n')}\n\nself time by function:\n${top(byFunction, 25).join('\n')}`);
