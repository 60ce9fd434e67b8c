/**
 * The reserve script with no HTTP in front: calls of the `reserve` command (reserve.lua, registered by
 * packages/redis-store/src/scripts.ts; ioredis sends EVALSHA) from this process, in pipelines of
 * `batch` calls with `inFlight` pipelines under way at once, for a fixed time. The pipelines go through
 * pipelineBySlotGroup, the system's own way of pipelining over many sales: one pipeline on one Redis, one
 * per master serving the calls' slots on a cluster (sent side by side).
 *
 * Besides calls per second, each run reads what it cost: this process's CPU per call (the client), and
 * from every Redis node it loaded (INFO) the time spent inside the script per call and the redis-server's
 * CPU per call. A shared box moves calls per second; the costs per call move much less.
 */
import os from 'node:os';
import { Redis } from 'ioredis';
import { newReservationId, REBUY_RULE_DEFAULTS, type SaleDefinition } from '@flashsale/domain';
import type { RedisCluster } from '@flashsale/harness';
import {
  pipelineBySlotGroup,
  saleKeys,
  type ScriptCommands,
  type ScriptedRedis,
  type SaleKeys,
  createSaleStore,
  reserveArgs,
  reserveCodeOf,
  type ReserveReply,
} from '@flashsale/redis-store';

export interface ReserveRun {
  calls: number;
  callsPerSecond: number;
  /** CPU (user + system) of this process, the client, per call, in µs. */
  clientCpuUs: number;
  /** Time Redis spent inside the script per call (INFO commandstats, EVALSHA and EVAL), every node summed, in µs. */
  redisScriptUs: number;
  /** CPU (user + system) of the redis-server processes per call (INFO cpu), every node summed, in µs. */
  redisCpuUs: number;
  /** The box's one-minute load average when the run started. */
  loadAverage: number;
}

/** One call: which sale, which buyer. */
export interface ReserveCall {
  saleId: number;
  keys: SaleKeys;
  buyer: string;
}

export interface ReserveLoadOptions {
  /** The arguments of call number `i` of the run. */
  call(i: number): ReserveCall;
  /** The ReserveCode every reply must carry (1 reserved, -6 already purchased, -7 sold out); anything else fails the run. */
  expect: number;
  /** Run for this long, or until `calls` calls are answered. */
  seconds?: number;
  calls?: number;
  batch: number;
  inFlight: number;
}

/** A node the load reaches, for its INFO: its URL. */
export type NodeUrls = string[];

interface NodeCounters {
  scriptUs: number;
  cpuSeconds: number;
}

async function nodeCounters(urls: NodeUrls): Promise<NodeCounters> {
  const each = await Promise.all(
    urls.map(async (url) => {
      const redis = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        const [commandstats, cpu] = [await redis.info('commandstats'), await redis.info('cpu')];
        const scriptUs = [...commandstats.matchAll(/^cmdstat_(?:evalsha|eval):calls=\d+,usec=(\d+)/gm)].reduce(
          (sum, m) => sum + Number(m[1]),
          0,
        );
        const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
        return { scriptUs, cpuSeconds: field('used_cpu_user') + field('used_cpu_sys') };
      } finally {
        redis.disconnect();
      }
    }),
  );
  return each.reduce((a, b) => ({ scriptUs: a.scriptUs + b.scriptUs, cpuSeconds: a.cpuSeconds + b.cpuSeconds }), {
    scriptUs: 0,
    cpuSeconds: 0,
  });
}

/**
 * Runs the load and checks every reply: a reply that is an error or carries another code than `expect`
 * stops the run with an error. `nodes` are the Redis nodes the calls reach (their INFO is read before and
 * after); they must serve nothing else meanwhile.
 */
export async function reserveLoad(client: ScriptedRedis, nodes: NodeUrls, options: ReserveLoadOptions): Promise<ReserveRun> {
  const { call, expect, batch, inFlight } = options;
  const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
  const before = await nodeCounters(nodes);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = options.seconds === undefined ? Infinity : started + options.seconds * 1000;
  const limit = options.calls ?? Infinity;
  let issued = 0;
  let answered = 0;
  const lane = async () => {
    while (performance.now() < deadline && issued < limit) {
      const calls = Array.from({ length: Math.min(batch, limit - issued) }, () => call(issued++));
      const replies = await pipelineBySlotGroup(
        client,
        calls.map((c) => c.keys.meta),
        (pipeline, _key, index) => {
          const { saleId, keys, buyer } = calls[index]!;
          // Queued on the pipeline, not sent: pipelineBySlotGroup's exec() sends them.
          void (pipeline as unknown as ScriptCommands).reserve(...reserveArgs(keys, buyer, 1, newReservationId(saleId), 3));
        },
      );
      for (const [error, result] of replies) {
        const code = result === null || result === undefined ? undefined : reserveCodeOf(result as ReserveReply);
        if (error || code !== expect)
          throw new Error(`reserve answered ${error ? error.message : JSON.stringify(result)}, expected code ${expect}`);
      }
      answered += calls.length;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const after = await nodeCounters(nodes);
  return {
    calls: answered,
    callsPerSecond: answered / seconds,
    clientCpuUs: (cpu.user + cpu.system) / answered,
    redisScriptUs: (after.scriptUs - before.scriptUs) / answered,
    redisCpuUs: ((after.cpuSeconds - before.cpuSeconds) * 1e6) / answered,
    loadAverage,
  };
}

/**
 * A sale of the load's own, published on `client` with the real publish script (no MySQL row: these
 * Redis servers are the bench's own and serve nothing else). Each run drops its sales' keys at its end,
 * so the next may use the same ids.
 */
export async function benchSale(
  client: ScriptedRedis,
  prefix: string,
  id: number,
  stock: number,
): Promise<{ saleId: number; keys: SaleKeys }> {
  // With the rebuy rule every created sale carries: an accepted call reads the buyer's closed orders.
  const sale: SaleDefinition = {
    id,
    name: `${prefix} reserve load`,
    stock,
    perUserLimit: 1,
    startsAt: Date.now() - 60_000,
    endsAt: Date.now() + 3_600_000,
    rebuyRule: REBUY_RULE_DEFAULTS,
  };
  await createSaleStore(client, prefix).publish(sale, 'bench');
  return { saleId: sale.id, keys: saleKeys(prefix, sale.id) };
}

/** Removes a sale's keys (UNLINK: a stream of a few hundred thousand entries is freed in the background). */
export async function dropSale(client: ScriptedRedis, keys: SaleKeys): Promise<void> {
  await client.unlink(keys.meta, keys.buyers, keys.stream);
}

export type ScriptPath = 'accept' | 'duplicate' | 'sold_out';

/** What each path's reply must carry (ReserveCode): reserved, already purchased, sold out. */
export const EXPECTED_CODE: Record<ScriptPath, number> = { accept: 1, duplicate: -6, sold_out: -7 };

/**
 * One run of one path on a sale of its own, as the purchase bench sets them up: accept (ample stock,
 * every call a new buyer), duplicate (the first `duplicateBuyers` buyers already hold a reservation and
 * call in turn), sold out (one unit, taken before the run; every call a new buyer). Checked: every reply
 * carries the path's code (the load stops otherwise), and afterwards the sale holds as many buyers as the
 * accepted calls, or as many as before the run for a refusal.
 */
export async function reservePathRun(
  client: ScriptedRedis,
  nodes: NodeUrls,
  prefix: string,
  path: ScriptPath,
  options: { seconds: number; batch: number; inFlight: number; duplicateBuyers: number },
): Promise<ReserveRun> {
  const { saleId, keys } = await benchSale(client, prefix, 1, path === 'sold_out' ? 1 : 100_000_000);
  try {
    const buyer = (i: number) => ({ saleId, keys, buyer: `b${i}` });
    const prebuy = path === 'sold_out' ? 1 : path === 'duplicate' ? options.duplicateBuyers : 0;
    if (prebuy > 0)
      await reserveLoad(client, nodes, {
        ...options,
        seconds: undefined,
        calls: prebuy,
        expect: 1,
        call: (i) => ({ saleId, keys, buyer: path === 'sold_out' ? 'someone' : `b${i}` }),
      });
    const call = path === 'duplicate' ? (i: number) => buyer(i % options.duplicateBuyers) : buyer;
    const run = await reserveLoad(client, nodes, { ...options, call, expect: EXPECTED_CODE[path] });
    const holders = await client.hlen(keys.buyers);
    if (holders !== prebuy + (path === 'accept' ? run.calls : 0))
      throw new Error(`${path}: ${holders} buyers hold a reservation after ${run.calls} calls; not what this path must leave`);
    return run;
  } finally {
    await dropSale(client, keys);
  }
}

/**
 * One run of accepted calls spread over the sales `saleIds` (call i goes to the (i mod n)th sale, every
 * call a new buyer), checked as reservePathRun's accept path.
 */
export async function spreadRun(
  client: ScriptedRedis,
  nodes: NodeUrls,
  prefix: string,
  saleIds: number[],
  options: { seconds: number; batch: number; inFlight: number },
): Promise<ReserveRun> {
  const made: { saleId: number; keys: SaleKeys }[] = [];
  try {
    for (const id of saleIds) made.push(await benchSale(client, prefix, id, 100_000_000));
    const run = await reserveLoad(client, nodes, { ...options, expect: 1, call: (i) => ({ ...made[i % made.length]!, buyer: `b${i}` }) });
    let holders = 0;
    for (const { keys } of made) holders += await client.hlen(keys.buyers);
    if (holders !== run.calls) throw new Error(`${holders} buyers hold a reservation after ${run.calls} accepted calls`);
    return run;
  } finally {
    for (const { keys } of made) await dropSale(client, keys);
  }
}

/**
 * `count` sale ids whose keys the cluster's masters serve in equal shares (as equal as `count` allows):
 * the lowest ids, skipping those whose master already has its share. Sales with ids 1 to 30 would put
 * 13, 9 and 8 on the three masters of a fresh cluster.
 */
export async function evenlySpreadSales(
  cluster: RedisCluster,
  prefix: string,
  count: number,
): Promise<{ ids: number[]; perMaster: number[] }> {
  const masters = (await cluster.masters()).map((node) => node.port);
  const share = masters.map((_, i) => Math.floor(count / masters.length) + (i < count % masters.length ? 1 : 0));
  const taken = masters.map(() => 0);
  const ids: number[] = [];
  for (let id = 1; ids.length < count; id += 1) {
    const at = masters.indexOf((await cluster.masterOf(saleKeys(prefix, id).meta)).port);
    if (at >= 0 && taken[at]! < share[at]!) {
      taken[at]! += 1;
      ids.push(id);
    }
  }
  return { ids, perMaster: taken };
}
