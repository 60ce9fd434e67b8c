/**
 * The `door` part: what the waiting room costs, on one gateway process, contenders
 * alternated in each round:
 * - accept, `admission` absent: today's path (a sale created through the admin API without it);
 * - accept, `{"mode":"open"}`: the same create with the open door named;
 * - accept, admitted: a purchase on a queued sale by buyers the door admitted (joined through the join
 *   script, admitted by the door's own admit script, as a gateway's frontier moves it);
 * - queue status: `GET /api/sales/:id/queue` by waiting buyers, each sending the ticket their join
 *   (over HTTP) answered, as docs/api.md's client does;
 * - sold out: the gateway's sold-out purchase, the bar the status poll is read against.
 */
import os from 'node:os';
import { startRedisServer } from '@flashsale/harness';
import { createRedis, type SaleKeys, type SaleRedis, type ScriptCommands, type ScriptedRedis } from '@flashsale/redis-store';
import { loadRange, operatorSale, ratioText, roundRatios, runLine, type PartContext, type RoundRatios, type Run } from './part-context.ts';
import type { RunInfo, Summary } from './summary.ts';
import { cpuSeconds, startGatewayProcess, type BenchServer } from './servers.ts';
import { wrkRequests } from './wrk-load.ts';

/** Admitted buyers per second of load: more than the admitted purchase answers, so none buys twice (checked). */
const ADMITTED_PER_SECOND_OF_LOAD = 50_000;
/** Waiting buyers polling: each polls a few times a second at most, under RATE_LIMIT_PER_SECOND. */
const WAITING_BUYERS = 10_000;
const JOIN_BATCH = 1000;
const HTTP_JOINS_AT_ONCE = 32;

export interface DoorResults {
  admittedBuyers: number;
  waitingBuyers: number;
  /** Calls the part's redis-server answered per status poll, each round's. */
  redisCallsPerPoll: number[];
  loadAverages: string;
  absent: Summary;
  open: Summary;
  admitted: Summary;
  status: Summary;
  soldOut: Summary;
  /** The rounds' ratios of req/s. */
  ratios: { openToAbsent: RoundRatios; admittedToOpen: RoundRatios; statusToSoldOut: RoundRatios };
}

/** Calls a redis-server has answered since it started, every command (INFO commandstats). */
async function redisCalls(redis: ScriptedRedis): Promise<number> {
  return [...(await redis.info('commandstats')).matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** Removes what the door keeps of a sale (the purchase check removes the rest). */
const dropDoor = (redis: ScriptedRedis, keys: SaleKeys) => redis.unlink(keys.queue, keys.turns, keys.door, keys.paid, keys.pow);

/** Joins `buyers` (the join script, pipelined) and moves the door on until all of them are admitted. */
async function admitAll(redis: ScriptedRedis, sale: SaleRedis, buyers: { id: string }[]): Promise<void> {
  const { keys } = sale;
  for (let start = 0; start < buyers.length; start += JOIN_BATCH) {
    // The join script (join-queue-6.lua), queued on a pipeline and sent by exec(); after the start the
    // draw is not used: each buyer gets the next arrival number.
    const pipeline = redis.pipeline() as unknown as ScriptCommands & { exec(): Promise<[Error | null, unknown][]> };
    for (const buyer of buyers.slice(start, start + JOIN_BATCH))
      void pipeline.joinQueue(keys.meta, keys.queue, keys.door, keys.turns, keys.buyers, keys.pow, buyer.id, '0', '', '', '');
    for (const [error, reply] of await pipeline.exec()) {
      if (error || Number((reply as unknown[])[0]) !== 1)
        throw new Error(`door: a join answered ${error ? error.message : JSON.stringify(reply)}`);
    }
  }
  // The door admits up to its rate per second of Redis's clock (100,000 here), banked up to one second.
  const deadline = Date.now() + 120_000;
  for (;;) {
    const reading = await sale.admitQueue();
    if (reading.kind !== 'door') throw new Error(`door: sale ${sale.saleId} answered ${reading.kind}`);
    if (reading.door.front >= buyers.length) return;
    if (Date.now() > deadline) throw new Error(`door: ${reading.door.front} of ${buyers.length} buyers admitted after 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Joins `buyers` over HTTP as clients do (POST /api/sales/:id/queue); the ticket each was answered. */
async function joinOverHttp(gateway: BenchServer, saleId: number, buyers: { id: string; token: string }[]): Promise<string[]> {
  const tickets: string[] = [];
  let next = 0;
  const lane = async () => {
    while (next < buyers.length) {
      const i = next++;
      const res = await fetch(`${gateway.url}/api/sales/${saleId}/queue`, {
        method: 'POST',
        headers: { authorization: `Bearer ${buyers[i]!.token}` },
      });
      const body = (await res.json()) as { state?: string; ticket?: string };
      if (res.status !== 200 || body.state !== 'waiting' || !body.ticket)
        throw new Error(`door: a join answered ${res.status} ${JSON.stringify(body)}`);
      tickets[i] = body.ticket;
    }
  };
  await Promise.all(Array.from({ length: HTTP_JOINS_AT_ONCE }, lane));
  return tickets;
}

export async function doorPart(part: PartContext): Promise<DoorResults> {
  const { settings, env, buyers, log, stops, measure, alternate, summary, warmUp } = part;
  const admittedBuyers = buyers.slice(0, Math.min(buyers.length, Math.ceil(settings.seconds * ADMITTED_PER_SECOND_OF_LOAD)));
  const waitingBuyers = buyers.slice(-WAITING_BUYERS);
  log(
    `the door: accept with admission absent, {mode:open}, by ${admittedBuyers.length} admitted buyers of a queued sale; the queue status polled by ${waitingBuyers.length} waiting buyers; the sold-out path`,
  );
  // A redis-server of the part's own: its INFO then counts the Redis calls of the status poll alone.
  const server = await startRedisServer();
  stops.push(() => server.stop());
  const redis = createRedis(server.url);
  const store = part.storeOn(redis);
  const gateway = await startGatewayProcess({ ...env, REDIS_URL: server.url, ADMIN_TOKEN: part.config.ADMIN_TOKEN });
  stops.push(gateway.stop);
  await warmUp(gateway, redis);

  const admitted = async () => {
    const saleId = await operatorSale(part, gateway, 'door admitted', {
      mode: 'queue',
      admitPerSecond: 100_000,
      admissionTtlSeconds: 3600,
      preQueueSeconds: 0,
    });
    const inRedis = store.sale(saleId);
    await admitAll(redis, inRedis, admittedBuyers);
    try {
      return await measure(gateway, 'accept', { client: redis, saleId, buyers: admittedBuyers });
    } finally {
      await dropDoor(redis, inRedis.keys);
    }
  };
  const redisCallsPerPoll: number[] = [];
  const status = async (): Promise<Run> => {
    // A door at its slowest (one buyer per 100 s): every poller stays waiting behind the frontier.
    const saleId = await operatorSale(part, gateway, 'door waiting', {
      mode: 'queue',
      admitPerSecond: 0.01,
      admissionTtlSeconds: 3600,
      preQueueSeconds: 0,
    });
    const tickets = await joinOverHttp(gateway, saleId, waitingBuyers);
    const requests = waitingBuyers.map((buyer, i) => ({
      method: 'GET',
      path: `/api/sales/${saleId}/queue`,
      headers: { Authorization: `Bearer ${buyer.token}`, 'Queue-Ticket': tickets[i]! },
    }));
    const loadAverage = Number(os.loadavg()[0]!.toFixed(2));
    const cpuBefore = cpuSeconds(gateway.pid);
    const callsBefore = await redisCalls(redis);
    const result = await wrkRequests(gateway.url, requests, settings.connections, settings.seconds);
    const cpuUsPerRequest = ((cpuSeconds(gateway.pid) - cpuBefore) * 1e6) / result.requests;
    // INFO's own calls and the gateway's background reads (sale events, verdicts) are counted too.
    redisCallsPerPoll.push(Number((((await redisCalls(redis)) - callsBefore) / result.requests).toFixed(4)));
    const { keys } = store.sale(saleId);
    await redis.unlink(keys.meta, keys.buyers, keys.stream);
    await dropDoor(redis, keys);
    if (result.refused > 0 || result.errors > 0 || result.requests === 0)
      throw new Error(
        `queue status: ${result.ok} 2xx, ${result.refused} refused, ${result.errors} errors; every poll must be answered 200`,
      );
    return { ...result, cpuUsPerRequest, loadAverage };
  };
  const runs = await alternate({
    absent: async () => measure(gateway, 'accept', { client: redis, saleId: await operatorSale(part, gateway, 'door absent') }),
    open: async () =>
      measure(gateway, 'accept', { client: redis, saleId: await operatorSale(part, gateway, 'door open', { mode: 'open' }) }),
    admitted,
    status,
    'sold out': () => measure(gateway, 'sold_out', { client: redis }),
  });
  await gateway.stop();
  await redis.quit();
  await server.stop();
  return {
    admittedBuyers: admittedBuyers.length,
    waitingBuyers: waitingBuyers.length,
    redisCallsPerPoll,
    loadAverages: loadRange(Object.values(runs).flat()),
    absent: summary(runs.absent),
    open: summary(runs.open),
    admitted: summary(runs.admitted),
    status: summary(runs.status),
    soldOut: summary(runs['sold out']),
    ratios: {
      openToAbsent: roundRatios(runs.open, runs.absent),
      admittedToOpen: roundRatios(runs.admitted, runs.open),
      statusToSoldOut: roundRatios(runs.status, runs['sold out']),
    },
  };
}

/** The section of docs/BENCHMARKS.md between the door markers. */
export function doorMarkdown(r: RunInfo, d: DoorResults): string {
  const row = (label: string, s: Summary, ratio: string) =>
    `| ${label} | ${s.rps} | ${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} | ${s.cpuUsPerRequest?.toFixed(0)} | ${ratio} |`;
  const within = (value: number, goal: number) => (value >= goal ? `met (goal ${goal})` : `**not met** (goal ${goal})`);
  return [
    runLine(r),
    '',
    `One gateway process; load average ${d.loadAverages} at the start of the runs. Each accept run a sale of its own created through the admin API; the admitted purchase by ${d.admittedBuyers} buyers the door had admitted before the run; the status poll by ${d.waitingBuyers} waiting buyers, each with their ticket, costing ${d.redisCallsPerPoll.join(', ')} Redis calls per poll (each round's; the gateway's background reads included), on a redis-server of the part's own.`,
    '',
    '| path | req/s | p50 / p99 ms | gateway CPU µs/request | ratio (medians of the rounds) |',
    '|---|---|---|---|---|',
    row('accept, `admission` absent (today)', d.absent, '1'),
    row('accept, `{"mode":"open"}`', d.open, `open / absent ${ratioText(d.ratios.openToAbsent)}`),
    row('accept, queued sale, admitted buyers', d.admitted, `admitted / open ${ratioText(d.ratios.admittedToOpen)}`),
    row('`GET /api/sales/:id/queue`, waiting buyers', d.status, `status / sold out ${ratioText(d.ratios.statusToSoldOut)}`),
    row('purchase, sold out', d.soldOut, '1'),
    '',
    `The bars, by the medians: open within the noise of absent: ${d.ratios.openToAbsent.low <= 1 && d.ratios.openToAbsent.high >= 1 ? 'the rounds straddle 1' : '**every round on one side of 1**'}, gateway CPU ${d.open.cpuUsPerRequest?.toFixed(0)} against ${d.absent.cpuUsPerRequest?.toFixed(0)} µs/request; the status poll at least the sold-out path's rate: ${within(d.ratios.statusToSoldOut.median, 1)}; the admitted purchase within 0.9 of the open accept path: ${within(d.ratios.admittedToOpen.median, 0.9)}.`,
  ].join('\n');
}
