/**
 * `npm run bench:profile [-- accept|duplicate|sold_out [gateway|authenticated|bare]]`: the gateway (or a
 * baseline) under the benchmark's load (wrk when installed, as `npm run bench`) with `node --cpu-prof`,
 * then where its CPU went while the load ran (start-up and idle time left out): CPU per request, the
 * garbage collector's pauses (bench/gc-watch.mjs), and self time by area and by function. The
 * .cpuprofile stays in the printed directory for Chrome DevTools.
 * BENCH_SECONDS (5), BENCH_CONNECTIONS (64), BENCH_LOADGEN as for the bench.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { createRedis, createSaleStore } from '@flashsale/redis-store';
import { createPrisma, migrate } from '@flashsale/order-store';
import { ensureServices } from '../infra/ensure-services.ts';
import { chooseLoadGenerator } from './load.ts';
import { cpuSecondsByThread, startBaseline, startGatewayProcess } from './servers.ts';
import { benchBuyers, cycleOf, openPathSale } from './path-sale.ts';
import type { PathName } from './summary.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

const COMMAND = {
  usage: `usage: npm run bench:profile -- [accept|duplicate|sold_out] [gateway|authenticated|bare]

The gateway (or a baseline of the benchmark) under the benchmark's load with node --cpu-prof, then where
its CPU went while the load ran: CPU per request, self time by area and by function. The .cpuprofile
stays in the directory it prints. Defaults: accept, gateway. BENCH_SECONDS (5), BENCH_CONNECTIONS (64),
BENCH_LOADGEN as for npm run bench.`,
  allowPositionals: true,
} as const;
const [path = 'accept', target = 'gateway', ...extra] = parseCommandLine(COMMAND).positionals;
if (!['accept', 'duplicate', 'sold_out'].includes(path))
  exitWithUsage(COMMAND, `the path must be accept, duplicate or sold_out, not ${path}`);
if (!['gateway', 'authenticated', 'bare'].includes(target))
  exitWithUsage(COMMAND, `the server must be gateway, authenticated or bare, not ${target}`);
if (extra.length > 0) exitWithUsage(COMMAND, `unexpected arguments: ${extra.join(' ')}`);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const load = chooseLoadGenerator();
const config = loadConfig();
const dir = mkdtempSync(join(tmpdir(), 'gateway-profile-'));
await ensureServices();
await migrate(config.DATABASE_URL);
const redis = createRedis(config.REDIS_URL);
const store = createSaleStore(redis, `profile-${randomBytes(3).toString('hex')}`);
const prisma = createPrisma(config.DATABASE_URL, 2);
const { ids, buyers } = benchBuyers(SECONDS, config.AUTH_SECRET);
const saleId = await openPathSale(prisma, redis, store, path as PathName, ids, `${store.prefix} profile`);

const gcFile = join(dir, 'gc.jsonl');
const env = {
  REDIS_PREFIX: store.prefix,
  BENCH_PREFIX: store.prefix,
  DATABASE_URL: config.DATABASE_URL,
  REDIS_URL: config.REDIS_URL,
  AUTH_SECRET: config.AUTH_SECRET,
  BENCH_GC_FILE: gcFile,
};
const profiling = ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--import=${fileURLToPath(new URL('./gc-watch.mjs', import.meta.url))}`];
const server =
  target === 'gateway'
    ? await startGatewayProcess(env, 1, profiling.join(' '))
    : await startBaseline(env, target === 'authenticated' ? 'hs256' : 'none', profiling);

type GcTotals = Record<'minor' | 'major' | 'incremental' | 'weakcb', { count: number; ms: number }>;
/** The server's garbage-collection totals so far (bench/gc-watch.mjs), asked for with SIGUSR2. */
async function gcTotals(): Promise<GcTotals> {
  const written = () => (existsSync(gcFile) ? readFileSync(gcFile, 'utf8').split('\n').filter(Boolean) : []);
  const linesBefore = written().length;
  process.kill(server.pid, 'SIGUSR2');
  for (let waited = 0; waited < 5000; waited += 20) {
    const lines = written();
    if (lines.length > linesBefore) return (JSON.parse(lines.at(-1)!) as { totals: GcTotals }).totals;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the server wrote no garbage-collection totals to ${gcFile}`);
}

const gcBefore = await gcTotals();
const threadsBefore = cpuSecondsByThread(server.pid);
// The profile's clock is the monotonic one that process.hrtime reads, in microseconds.
const loadStarted = Number(process.hrtime.bigint() / 1000n);
const result = await load.run({
  url: server.url,
  saleId,
  buyers,
  cycle: cycleOf(path as PathName),
  connections: CONNECTIONS,
  seconds: SECONDS,
});
const loadEnded = Number(process.hrtime.bigint() / 1000n);
const threadsAfter = cpuSecondsByThread(server.pid);
const gcAfter = await gcTotals();
console.log(
  `${target}, ${path}, under ${load.name}: ${Math.round(result.rps)} req/s, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${result.ok} 2xx, ${result.refused} refused, ${result.errors} errors`,
);
await server.stop();
await store.deleteAllKeys();
await redis.quit();
await prisma.sale.delete({ where: { id: saleId } });
await prisma.$disconnect();

const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
if (!file) throw new Error(`no profile written in ${dir}`);
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
};
const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
const byFunction = new Map<string, number>();
const byArea = new Map<string, number>();
let busyUs = 0;
let busySamples = 0;
let at = profile.startTime;
for (const [i, sample] of profile.samples.entries()) {
  const delta = profile.timeDeltas[i]!;
  at += delta;
  if (at < loadStarted || at > loadEnded) continue;
  const { functionName, url, lineNumber } = byNode.get(sample)!.callFrame;
  if (functionName === '(idle)') continue;
  busyUs += delta;
  busySamples += 1;
  const area =
    /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
    (url.startsWith('node:') ? 'node core' : url.includes('/work/') || url.includes('file:') ? 'project code' : functionName || '(native)');
  const key = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + 1);
  byArea.set(area, (byArea.get(area) ?? 0) + 1);
}
// Each function's self time per request, for comparing two profiles (a gateway and a baseline) line by line.
writeFileSync(
  join(dir, 'self-us-per-request.json'),
  JSON.stringify(
    Object.fromEntries(
      [...byFunction].map(([name, count]) => [name, Number(((count * busyUs) / busySamples / result.requests).toFixed(3))]),
    ),
    null,
    1,
  ),
);
const top = (map: Map<string, number>, n: number) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, count]) => `${((100 * count) / busySamples).toFixed(1).padStart(5)}%  ${name}`);
console.log(`\nprofile: ${join(dir, file)}
busy ${(busyUs / 1e6).toFixed(2)} s of the ${((loadEnded - loadStarted) / 1e6).toFixed(2)} s of load (the main thread, sampled): ${(busyUs / result.requests).toFixed(1)} us per request

CPU by thread during the load (/proc, user + system), us per request:
${[...threadsAfter]
  .map(([name, seconds]) => [name, ((seconds - (threadsBefore.get(name) ?? 0)) * 1e6) / result.requests] as const)
  .sort((a, b) => b[1] - a[1])
  .map(([name, us]) => `  ${name.padEnd(16)} ${us.toFixed(1)}`)
  .join('\n')}

garbage collections during the load (bench/gc-watch.mjs; pauses of the main thread):
${(['minor', 'major', 'incremental'] as const)
  .map((kind) => {
    const count = gcAfter[kind].count - gcBefore[kind].count;
    const ms = gcAfter[kind].ms - gcBefore[kind].ms;
    return `  ${kind.padEnd(11)} ${String(count).padStart(5)}, ${ms.toFixed(1)} ms in all, ${count > 0 ? (ms / count).toFixed(2) : '-'} ms each, ${((ms * 1000) / result.requests).toFixed(2)} us per request`;
  })
  .join('\n')}

self time by area, % of the busy samples:
${top(byArea, 12).join('\n')}

self time by function, % of the busy samples:
${top(byFunction, 40).join('\n')}`);
