/**
 * The `neighbours` part: the buyer path (the accept path, as the purchase part
 * measures it) on one gateway process with its defaults, quiet, and beside what an outsider or an
 * operator may do to the same process meanwhile, contenders alternated in each round:
 * - metrics port held: 1,000 idle connections to the metrics port from 1,000 loopback addresses (the
 *   probe's attack), which the port's cap (METRICS_MAX_CONNECTIONS) holds at its size and closes beyond;
 * - metrics port scraped: wrk scraping /metrics as fast as it answers, on as many connections as one
 *   address may hold there, for the whole buyer run;
 * - live streams at the caps: dashboard sessions holding every live stream the process allows
 *   (DASHBOARD_STREAMS_PER_SESSION per session, DASHBOARD_STREAMS_PER_PROCESS in all), each on a sale of
 *   its own, the one past each cap checked refused (429).
 * And an honest buyer's reservation lookup (one at a time, from an address of its own, 127.0.0.2) quiet
 * and beside wrk flooding GET /api/sales/<an id no sale has> on 32 connections from 127.0.0.1, with the
 * gateway's default budget of unauthenticated reads (PUBLIC_READS_PER_ADDRESS_PER_SECOND): the flood
 * is answered 429 past the budget and its misses are remembered, so the lookup's p99 should stay within
 * 2x of its quiet value.
 */
import { connect, type Socket } from 'node:net';
import { Pool } from 'undici';
import { buyerToken, percentile } from '@flashsale/harness';
import { loadRange, operatorSale, ratioText, roundRatios, runLine, type PartContext, type RoundRatios, type Run } from './part-context.ts';
import type { RunInfo, Summary } from './summary.ts';
import { startGatewayProcess, type BenchServer } from './servers.ts';
import { wrkRequests } from './wrk-load.ts';

const IDLE_CONNECTIONS = 1000;

export interface NeighboursResults {
  loadAverages: string;
  metricsMaxConnections: number;
  streamsPerSession: number;
  streamsPerProcess: number;
  quiet: Summary;
  metricsHeld: Summary & { held: number[] };
  metricsScraped: Summary & { scrapesPerSecond: number[] };
  liveStreams: Summary & { events: number[] };
  /** The rounds' ratios of accepts/s to quiet's. */
  ratios: { metricsHeld: RoundRatios; metricsScraped: RoundRatios; liveStreams: RoundRatios };
  /** The honest buyer's reservation lookups, quiet and beside the unknown-id flood (every round's lookups pooled). */
  lookups?: { publicReadsPerAddress: number; quiet: LookupSummary; flooded: LookupSummary & { floodAnswersPerSecond: number[] } };
}

export interface LookupSummary {
  lookups: number;
  p50: number;
  p99: number;
}

const FLOOD_CONNECTIONS = 32;
const UNKNOWN_SALE = 999_999_999;

/**
 * Honest buyers' lookups of their reservations for `seconds`, one at a time, about 50 a second in all,
 * from 127.0.0.2; every answer must be 200. Ten buyers in turn: one buyer's lookups have their own budget
 * (RATE_LIMIT_PER_SECOND, 10), and a page polling does not ask more than a few times a second.
 */
async function honestLookups(url: string, holders: { token: string; reservationId: string }[], seconds: number): Promise<number[]> {
  const pool = new Pool(url, { connections: 1, connect: { localAddress: '127.0.0.2' } });
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  try {
    for (let i = 0; performance.now() < until; i += 1) {
      const { token, reservationId } = holders[i % holders.length]!;
      const started = performance.now();
      const res = await pool.request({
        method: 'GET',
        path: `/api/reservations/${reservationId}`,
        headers: { authorization: `Bearer ${token}` },
      });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`neighbours: the honest lookup answered ${res.statusCode}`);
      latencies.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await pool.close();
  }
  return latencies;
}

const lookupSummary = (latencies: number[]): LookupSummary => {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { lookups: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
};

/** `count` idle connections to `port`, each from an address of its own in 127.0.1.1 and up. */
async function idleConnections(port: number, count: number): Promise<{ open(): number; close(): void }> {
  const sockets: Socket[] = [];
  let open = 0;
  await Promise.all(
    Array.from({ length: count }, (_, i) => {
      const socket = connect({ host: '127.0.0.1', port, localAddress: `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}` });
      sockets.push(socket);
      socket.on('error', () => undefined);
      return new Promise<void>((resolve) => {
        socket.once('connect', () => {
          open += 1;
          socket.once('close', () => (open -= 1));
          resolve();
        });
        socket.once('close', () => resolve());
      });
    }),
  );
  return { open: () => open, close: () => sockets.forEach((socket) => socket.destroy()) };
}

/** A live stream held open as the dashboard's page holds it: its events counted, closed by abort. */
async function openStream(url: string, cookie: string, saleId: number): Promise<{ status: number; events(): number; close(): void }> {
  const abort = new AbortController();
  const res = await fetch(`${url}/admin/live?sale=${saleId}`, { headers: { cookie }, signal: abort.signal });
  let events = 0;
  if (res.status === 200) {
    void (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
          events += Buffer.from(chunk).toString('utf8').split('\n\n').length - 1;
      } catch {
        // Closed here.
      }
    })();
  } else await res.body?.cancel();
  return { status: res.status, events: () => events, close: () => abort.abort() };
}

async function signIn(url: string, token: string): Promise<string> {
  const res = await fetch(`${url}/admin/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  if (res.status !== 200) throw new Error(`neighbours: the dashboard sign-in answered ${res.status}`);
  await res.body?.cancel();
  return /^([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
}

export async function neighboursPart(part: PartContext): Promise<NeighboursResults> {
  const { settings, config, env, log, stops, measure, alternate, summary, warmUp } = part;
  const perSession = config.DASHBOARD_STREAMS_PER_SESSION;
  const perProcess = config.DASHBOARD_STREAMS_PER_PROCESS;
  const sessions = Math.ceil(perProcess / perSession);
  log(
    `the accept path quiet, beside ${IDLE_CONNECTIONS} idle connections to the metrics port, beside /metrics scraped, beside ${perProcess} live streams (${sessions} sessions)`,
  );
  // The budget of unauthenticated reads at its default (the harness turns it off for one-address load).
  const gatewayEnv = { PUBLIC_READS_PER_ADDRESS_PER_SECOND: config.PUBLIC_READS_PER_ADDRESS_PER_SECOND };
  const gateway: BenchServer & { process: { logs: Record<string, unknown>[] } } = await startGatewayProcess({
    ...env,
    ADMIN_TOKEN: config.ADMIN_TOKEN,
    PUBLIC_READS_PER_ADDRESS_PER_SECOND: String(gatewayEnv.PUBLIC_READS_PER_ADDRESS_PER_SECOND),
  });
  stops.push(gateway.stop);
  await warmUp(gateway);
  const metricsPort = Number(gateway.process.logs.find((line) => line.msg === 'gateway listening')!.metricsPort);
  const metricsUrl = `http://127.0.0.1:${metricsPort}`;
  // One address may hold a quarter of the metrics port's connections.
  const scrapeConnections = Math.max(1, Math.floor(config.METRICS_MAX_CONNECTIONS / 4));
  const cookies = await Promise.all(Array.from({ length: sessions }, () => signIn(gateway.url, config.ADMIN_TOKEN)));
  const spare = await signIn(gateway.url, config.ADMIN_TOKEN);
  const streamSales: number[] = [];
  for (let i = 0; i < perProcess; i += 1) streamSales.push(await operatorSale(part, gateway, `neighbours stream ${i}`));

  const held: number[] = [];
  const scrapes: number[] = [];
  const events: number[] = [];
  const metricsHeld = async (): Promise<Run> => {
    const flood = await idleConnections(metricsPort, IDLE_CONNECTIONS);
    try {
      const run = await measure(gateway, 'accept');
      held.push(flood.open());
      return run;
    } finally {
      flood.close();
    }
  };
  const metricsScraped = async (): Promise<Run> => {
    // A second longer than the buyer run, which first sets up its sale: the scrapes cover it.
    const [run, scrape] = await Promise.all([
      measure(gateway, 'accept'),
      wrkRequests(metricsUrl, [{ method: 'GET', path: '/metrics' }], scrapeConnections, settings.seconds + 1),
    ]);
    if (scrape.refused > 0 || scrape.ok === 0)
      throw new Error(`neighbours: /metrics answered ${scrape.ok} 2xx, ${scrape.refused} refused, ${scrape.errors} errors`);
    scrapes.push(Math.round(scrape.rps));
    return run;
  };
  const liveStreams = async (): Promise<Run> => {
    const open: Awaited<ReturnType<typeof openStream>>[] = [];
    try {
      for (let i = 0; i < perProcess; i += 1) {
        // The streams of the previous round end as their close reaches the gateway: until then, 429.
        const deadline = Date.now() + 10_000;
        for (;;) {
          const stream = await openStream(gateway.url, cookies[Math.floor(i / perSession)]!, streamSales[i]!);
          if (stream.status === 200) {
            open.push(stream);
            break;
          }
          if (stream.status !== 429 || Date.now() > deadline) throw new Error(`neighbours: live stream ${i + 1} answered ${stream.status}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      // Both caps reached: one more stream of a full session, and one of a session holding none.
      for (const cookie of [cookies[0]!, spare]) {
        const refused = await openStream(gateway.url, cookie, streamSales[0]!);
        if (refused.status !== 429) throw new Error(`neighbours: a live stream past the caps answered ${refused.status}, not 429`);
      }
      const before = open.reduce((sum, s) => sum + s.events(), 0);
      const run = await measure(gateway, 'accept');
      events.push(open.reduce((sum, s) => sum + s.events(), 0) - before);
      return run;
    } finally {
      for (const stream of open) stream.close();
    }
  };
  // The honest buyer holds a reservation, then looks it up quiet and beside the flood, alternated.
  const honestSale = await operatorSale(part, gateway, 'neighbours honest buyer');
  const holders = await Promise.all(
    Array.from({ length: 10 }, async (_, i) => {
      const token = buyerToken(`${part.prefix}-honest-${i}`, { secret: config.AUTH_SECRET });
      const bought = await fetch(`${gateway.url}/api/sales/${honestSale}/purchase`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      const reservationId = ((await bought.json()) as { reservationId?: string }).reservationId;
      if (bought.status !== 202 || !reservationId) throw new Error(`neighbours: an honest buyer's purchase answered ${bought.status}`);
      return { token, reservationId };
    }),
  );
  const quietLookups: number[] = [];
  const floodedLookups: number[] = [];
  const floodRates: number[] = [];
  for (let round = 0; round < settings.rounds; round += 1) {
    quietLookups.push(...(await honestLookups(gateway.url, holders, settings.seconds)));
    const [latencies, flood] = await Promise.all([
      honestLookups(gateway.url, holders, settings.seconds),
      wrkRequests(gateway.url, [{ method: 'GET', path: `/api/sales/${UNKNOWN_SALE}` }], FLOOD_CONNECTIONS, settings.seconds + 1),
    ]);
    floodedLookups.push(...latencies);
    floodRates.push(Math.round(flood.rps));
  }
  log(
    `honest lookups quiet p50/p99 ${lookupSummary(quietLookups).p50.toFixed(1)}/${lookupSummary(quietLookups).p99.toFixed(1)} ms, beside the unknown-id flood ${lookupSummary(floodedLookups).p50.toFixed(1)}/${lookupSummary(floodedLookups).p99.toFixed(1)} ms (flood answers/s ${floodRates.join(', ')})`,
  );

  const runs = await alternate({
    quiet: () => measure(gateway, 'accept'),
    'metrics port held': metricsHeld,
    'metrics port scraped': metricsScraped,
    'live streams at the caps': liveStreams,
  });

  await gateway.stop();
  return {
    loadAverages: loadRange(Object.values(runs).flat()),
    metricsMaxConnections: config.METRICS_MAX_CONNECTIONS,
    streamsPerSession: perSession,
    streamsPerProcess: perProcess,
    quiet: summary(runs.quiet),
    metricsHeld: { ...summary(runs['metrics port held']), held },
    metricsScraped: { ...summary(runs['metrics port scraped']), scrapesPerSecond: scrapes },
    liveStreams: { ...summary(runs['live streams at the caps']), events },
    lookups: {
      publicReadsPerAddress: gatewayEnv.PUBLIC_READS_PER_ADDRESS_PER_SECOND,
      quiet: lookupSummary(quietLookups),
      flooded: { ...lookupSummary(floodedLookups), floodAnswersPerSecond: floodRates },
    },
    ratios: {
      metricsHeld: roundRatios(runs['metrics port held'], runs.quiet),
      metricsScraped: roundRatios(runs['metrics port scraped'], runs.quiet),
      liveStreams: roundRatios(runs['live streams at the caps'], runs.quiet),
    },
  };
}

/** The section of docs/BENCHMARKS.md between the neighbours markers. */
export function neighboursMarkdown(r: RunInfo, n: NeighboursResults): string {
  const row = (label: string, s: Summary, ratio: string, beside: string) =>
    `| ${label} | ${s.rps} | ${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} | ${s.cpuUsPerRequest?.toFixed(0)} | ${ratio} | ${beside} |`;
  const list = (values: number[]) => values.join(', ');
  return [
    runLine(r),
    '',
    `One gateway process, its defaults (METRICS_MAX_CONNECTIONS ${n.metricsMaxConnections}, DASHBOARD_STREAMS_PER_SESSION ${n.streamsPerSession}, DASHBOARD_STREAMS_PER_PROCESS ${n.streamsPerProcess}); the buyer path is the accept path (every answer a 202, checked in Redis); load average ${n.loadAverages} at the start of the runs.`,
    '',
    '| beside the buyers | accepts/s | p50 / p99 ms | gateway CPU µs/request | accepts/s / quiet | what the neighbour did (each round) |',
    '|---|---|---|---|---|---|',
    row('nothing (quiet)', n.quiet, '1', ''),
    row(
      `${IDLE_CONNECTIONS} idle connections to the metrics port`,
      n.metricsHeld,
      ratioText(n.ratios.metricsHeld),
      `connections the port held open at the run's end: ${list(n.metricsHeld.held)}`,
    ),
    row(
      '/metrics scraped by wrk',
      n.metricsScraped,
      ratioText(n.ratios.metricsScraped),
      `scrapes/s: ${list(n.metricsScraped.scrapesPerSecond)}`,
    ),
    row(
      `${n.streamsPerProcess} live streams (both caps reached)`,
      n.liveStreams,
      ratioText(n.ratios.liveStreams),
      `events pushed during the run: ${list(n.liveStreams.events)}`,
    ),
    ...(n.lookups ? ['', lookupsMarkdown(n.lookups)] : []),
  ].join('\n');
}

function lookupsMarkdown(l: NonNullable<NeighboursResults['lookups']>): string {
  const row = (label: string, s: LookupSummary, beside: string) =>
    `| ${label} | ${s.lookups} | ${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} | ${beside} |`;
  return [
    `Honest buyers' reservation lookups (ten buyers in turn, one lookup at a time, about 50 a second, from 127.0.0.2), quiet and beside wrk flooding \`GET /api/sales/${UNKNOWN_SALE}\` (no such sale) on ${FLOOD_CONNECTIONS} connections from 127.0.0.1, PUBLIC_READS_PER_ADDRESS_PER_SECOND ${l.publicReadsPerAddress}; p99 flooded / quiet: **${(l.flooded.p99 / l.quiet.p99).toFixed(2)}**.`,
    '',
    '| beside the lookups | lookups | p50 / p99 ms | the flood (each round) |',
    '|---|---|---|---|',
    row('nothing (quiet)', l.quiet, ''),
    row('unknown-id flood', l.flooded, `answers/s (404 within the budget, 429 past it): ${l.flooded.floodAnswersPerSecond.join(', ')}`),
  ].join('\n');
}
