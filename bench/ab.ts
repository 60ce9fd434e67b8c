/**
 * `npm run bench:ab [-- --against <commit>] [--path accept|duplicate|sold_out] [--rounds N]`: this
 * checkout's gateway against the authenticated baseline and, with --against, against the gateway of
 * another commit, under the bench's load (wrk when installed), runs alternated round by round (the
 * order reversed every other round), each on a sale of its own. For each run and as medians: requests a
 * second, CPU per request of the process (every thread) and of its main thread alone.
 *
 * Why the main thread: under this closed loop a Node server's main thread is busy nearly all the time
 * (read off /proc per thread: 96 % for the gateway and the baselines alike), so its CPU per request is
 * the server's rate, and it moves less with the box than requests a second do. Two servers measured in
 * the same rounds see the same box; a change worth less than the rounds' spread needs more rounds.
 *
 * The other commit is checked out in a temporary git worktree beside this checkout, its dependencies
 * installed there with `npm ci` (a minute or two), both removed at the end.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { exitWithUsage, loadConfig, parseCommandLine } from '@flashsale/config';
import { createRedis, createSaleStore } from '@flashsale/redis-store';
import { createPrisma, migrate } from '@flashsale/order-store';
import { ensureServices } from '../infra/ensure-services.ts';
import { chooseLoadGenerator, median } from './load.ts';
import { cpuSeconds, ioSyscalls, mainThreadCpuSeconds, startBaseline, startGatewayProcess, type BenchServer } from './servers.ts';
import { benchBuyers, cycleOf, openPathSale } from './path-sale.ts';
import type { PathName } from './summary.ts';

const COMMAND = {
  usage: `usage: npm run bench:ab -- [--against <commit>] [--path accept|duplicate|sold_out] [--rounds N] [--control]

This checkout's gateway against the authenticated baseline of npm run bench and, with --against, against
the gateway of another commit (checked out in a temporary git worktree, npm ci there), under the same
wrk load, alternated round by round. Prints each run and the medians: requests a second, CPU per request
of the process and of its main thread alone (the thread whose time sets a Node server's rate).
With --control, a second authenticated baseline runs as a contender too: the same server against
itself, whose ratio round by round is how far this box alone moves a ratio. Every server has a warm-up
run first (not kept). Defaults: the accept path, 6 rounds. BENCH_SECONDS (5) and BENCH_CONNECTIONS (64) as for npm run bench.`,
  options: {
    against: { type: 'string' },
    path: { type: 'string', default: 'accept' },
    rounds: { type: 'string', default: '6' },
    control: { type: 'boolean', default: false },
  },
} as const;

const { values } = parseCommandLine(COMMAND);
const path = values.path as PathName;
if (!['accept', 'duplicate', 'sold_out'].includes(path))
  exitWithUsage(COMMAND, `--path must be accept, duplicate or sold_out, not ${values.path}`);
const ROUNDS = Number(values.rounds);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) exitWithUsage(COMMAND, `--rounds must be a positive integer, not ${values.rounds}`);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

let worktree: string | undefined;
let against: string | undefined;
if (values.against !== undefined) {
  try {
    against = git('rev-parse', '--short', `${values.against}^{commit}`);
  } catch {
    exitWithUsage(COMMAND, `--against must name a commit of this repository, not ${values.against}`);
  }
}

const load = chooseLoadGenerator();
const config = loadConfig();
const log = (text: string) => console.log(`[ab] ${text}`);
const stops: (() => Promise<unknown>)[] = [];
const saleIds: number[] = [];
try {
  await ensureServices();
  await migrate(config.DATABASE_URL);
  if (against !== undefined) {
    worktree = join(mkdtempSync(join(tmpdir(), 'bench-ab-')), 'checkout');
    log(`checking out ${against} in ${worktree} and installing its dependencies (npm ci)`);
    git('worktree', 'add', '--detach', worktree, against);
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: worktree, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const redis = createRedis(config.REDIS_URL);
  const store = createSaleStore(redis, `ab-${randomBytes(3).toString('hex')}`);
  const prisma = createPrisma(config.DATABASE_URL, 2);
  stops.push(
    async () => {
      await store.deleteAllKeys();
      await redis.quit();
    },
    async () => {
      await prisma.sale.deleteMany({ where: { id: { in: saleIds } } });
      await prisma.$disconnect();
    },
  );
  const contenders = [
    { name: 'gateway', root: undefined as string | undefined },
    ...(worktree ? [{ name: `gateway@${against}`, root: worktree }] : []),
    { name: 'authenticated', root: undefined },
    ...(values.control ? [{ name: 'authenticated (control)', root: undefined }] : []),
  ];
  const { ids, buyers } = benchBuyers(SECONDS, config.AUTH_SECRET);
  const env = {
    REDIS_PREFIX: store.prefix,
    BENCH_PREFIX: store.prefix,
    DATABASE_URL: config.DATABASE_URL,
    REDIS_URL: config.REDIS_URL,
    AUTH_SECRET: config.AUTH_SECRET,
  };
  const servers: { name: string; server: BenchServer }[] = [];
  for (const { name, root } of contenders) {
    const server = name.startsWith('authenticated') ? await startBaseline(env, 'hs256') : await startGatewayProcess(env, 1, '', root);
    stops.push(server.stop);
    servers.push({ name, server });
  }
  /** One load run of the path on a fresh sale of its own. */
  const runOnFreshSale = async (name: string, server: BenchServer) => {
    const saleId = await openPathSale(prisma, redis, store, path, ids, `${store.prefix} ${name}`);
    saleIds.push(saleId);
    return load.run({ url: server.url, saleId, buyers, cycle: cycleOf(path), connections: CONNECTIONS, seconds: SECONDS });
  };
  // A warm-up run each, as long as a measured one and not kept: V8 optimises a server's hot functions over
  // its first seconds under load, and a first round would otherwise measure that.
  for (const { name, server } of servers) await runOnFreshSale(`${name} warm-up`, server);
  // Each server's runs, one record a run: requests a second, and per request CPU (process, main thread) and
  // read and write system calls.
  type Measure = { rps: number; cpu: number; main: number; reads: number; writes: number };
  const measured = new Map(servers.map(({ name }) => [name, [] as Measure[]]));
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const { name, server } of round % 2 === 1 ? servers : [...servers].reverse()) {
      const [cpuBefore, mainBefore, ioBefore] = [cpuSeconds(server.pid), mainThreadCpuSeconds(server.pid), ioSyscalls(server.pid)];
      const result = await runOnFreshSale(name, server);
      const cpu = ((cpuSeconds(server.pid) - cpuBefore) * 1e6) / result.requests;
      const main = ((mainThreadCpuSeconds(server.pid) - mainBefore) * 1e6) / result.requests;
      const io = ioSyscalls(server.pid);
      const [reads, writes] = [(io.reads - ioBefore.reads) / result.requests, (io.writes - ioBefore.writes) / result.requests];
      if (result.errors > 0 || (path === 'accept' ? result.ok !== result.requests : result.ok > 0)) {
        throw new Error(`${name}, round ${round}: ${result.ok} 2xx of ${result.requests} answers, ${result.errors} errors`);
      }
      measured.get(name)!.push({ rps: result.rps, cpu, main, reads, writes });
      log(
        `round ${round} ${name}: ${Math.round(result.rps)} req/s, ${cpu.toFixed(1)} us CPU per request, main thread ${main.toFixed(1)} us, read/write system calls per request ${reads.toFixed(2)} / ${writes.toFixed(2)}`,
      );
    }
  }
  const medianOf = (runs: Measure[]) =>
    Object.fromEntries(
      (['rps', 'cpu', 'main', 'reads', 'writes'] as const).map((key) => [key, median(runs.map((run) => run[key]))]),
    ) as Measure;
  const medians = new Map([...measured].map(([name, runs]) => [name, medianOf(runs)]));
  const base = medians.get('authenticated')!;
  console.log(`\n${path}, ${ROUNDS} rounds of ${SECONDS} s under ${load.name}, ${CONNECTIONS} connections; medians:\n`);
  console.log(
    '| server | req/s | CPU us per request | main thread us per request | read / write system calls per request | req/s against the authenticated baseline |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const [name, m] of medians)
    console.log(
      `| ${name} | ${Math.round(m.rps)} | ${m.cpu.toFixed(1)} | ${m.main.toFixed(1)} | ${m.reads.toFixed(2)} / ${m.writes.toFixed(2)} | ${(m.rps / base.rps).toFixed(2)} |`,
    );
  const baseRounds = measured.get('authenticated')!;
  const rounds = (name: string) =>
    measured
      .get(name)!
      .map(({ rps }, i) => (rps / baseRounds[i]!.rps).toFixed(2))
      .join(', ');
  console.log(`\nAgainst the authenticated baseline, round by round (requests a second):`);
  for (const { name } of servers) if (name !== 'authenticated') console.log(`- ${name}: ${rounds(name)}`);
  if (against !== undefined) {
    const self = medians.get('gateway')!;
    const other = medians.get(`gateway@${against}`)!;
    console.log(
      `\nThis gateway against ${against}: ${(self.rps / other.rps).toFixed(3)}x the requests a second, main thread ${self.main.toFixed(1)} against ${other.main.toFixed(1)} us per request.`,
    );
  }
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  if (worktree !== undefined) {
    try {
      git('worktree', 'remove', '--force', worktree);
    } catch {
      rmSync(worktree, { recursive: true, force: true });
      git('worktree', 'prune');
    }
  }
}
