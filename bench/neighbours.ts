/**
 * The `neighbours` part (issue 22, items 3 and 4): the buyer path (the accept path, as the purchase part
 * measures it) on one gateway process with its defaults, quiet, and beside what an outsider or an
 * operator may do to the same process meanwhile, contenders alternated in each round:
 * - metrics port held: 1,000 idle connections to the metrics port from 1,000 loopback addresses (the
 *   probe's attack), which the port's cap (METRICS_MAX_CONNECTIONS) holds at its size and closes beyond;
 * - metrics port scraped: wrk scraping /metrics as fast as it answers, on as many connections as one
 *   address may hold there, for the whole buyer run;
 * - live streams at the caps: dashboard sessions holding every live stream the process allows
 *   (DASHBOARD_STREAMS_PER_SESSION per session, DASHBOARD_STREAMS_PER_PROCESS in all), each on a sale of
 *   its own, the one past each cap checked refused (429).
 */
import { connect, type Socket } from 'node:net';
import { loadRange, operatorSale, ratioText, roundRatios, runLine, type PartContext, type RoundRatios, type Run } from './part-context.ts';
import type { BenchResults, Summary } from './report.ts';
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
}

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
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) events += Buffer.from(chunk).toString('utf8').split('\n\n').length - 1;
      } catch {
        // Closed here.
      }
    })();
  } else await res.body?.cancel();
  return { status: res.status, events: () => events, close: () => abort.abort() };
}

async function signIn(url: string, token: string): Promise<string> {
  const res = await fetch(`${url}/admin/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  if (res.status !== 200) throw new Error(`neighbours: the dashboard sign-in answered ${res.status}`);
  await res.body?.cancel();
  return /^([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
}

export async function neighboursPart(part: PartContext): Promise<NeighboursResults> {
  const { settings, config, env, log, stops, measure, alternate, summary, warmUp } = part;
  const perSession = config.DASHBOARD_STREAMS_PER_SESSION;
  const perProcess = config.DASHBOARD_STREAMS_PER_PROCESS;
  const sessions = Math.ceil(perProcess / perSession);
  log(`the accept path quiet, beside ${IDLE_CONNECTIONS} idle connections to the metrics port, beside /metrics scraped, beside ${perProcess} live streams (${sessions} sessions)`);
  const gateway: BenchServer & { process: { logs: Record<string, unknown>[] } } = await startGatewayProcess({ ...env, ADMIN_TOKEN: config.ADMIN_TOKEN });
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
    const [run, scrape] = await Promise.all([measure(gateway, 'accept'), wrkRequests(metricsUrl, [{ method: 'GET', path: '/metrics' }], scrapeConnections, settings.seconds + 1)]);
    if (scrape.refused > 0 || scrape.ok === 0) throw new Error(`neighbours: /metrics answered ${scrape.ok} 2xx, ${scrape.refused} refused, ${scrape.errors} errors`);
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
  const runs = await alternate({ quiet: () => measure(gateway, 'accept'), 'metrics port held': metricsHeld, 'metrics port scraped': metricsScraped, 'live streams at the caps': liveStreams });
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
    ratios: {
      metricsHeld: roundRatios(runs['metrics port held'], runs.quiet),
      metricsScraped: roundRatios(runs['metrics port scraped'], runs.quiet),
      liveStreams: roundRatios(runs['live streams at the caps'], runs.quiet),
    },
  };
}

/** The section of docs/BENCHMARKS.md between the neighbours markers. */
export function neighboursMarkdown(r: BenchResults, n: NeighboursResults): string {
  const row = (label: string, s: Summary, ratio: string, beside: string) => `| ${label} | ${s.rps} | ${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} | ${s.cpuUsPerRequest?.toFixed(0)} | ${ratio} | ${beside} |`;
  const list = (values: number[]) => values.join(', ');
  return [
    runLine(r),
    '',
    `One gateway process, its defaults (METRICS_MAX_CONNECTIONS ${n.metricsMaxConnections}, DASHBOARD_STREAMS_PER_SESSION ${n.streamsPerSession}, DASHBOARD_STREAMS_PER_PROCESS ${n.streamsPerProcess}); the buyer path is the accept path (every answer a 202, checked in Redis); load average ${n.loadAverages} at the start of the runs.`,
    '',
    '| beside the buyers | accepts/s | p50 / p99 ms | gateway CPU µs/request | accepts/s / quiet | what the neighbour did (each round) |',
    '|---|---|---|---|---|---|',
    row('nothing (quiet)', n.quiet, '1', ''),
    row(`${IDLE_CONNECTIONS} idle connections to the metrics port`, n.metricsHeld, ratioText(n.ratios.metricsHeld), `connections the port held open at the run's end: ${list(n.metricsHeld.held)}`),
    row('/metrics scraped by wrk', n.metricsScraped, ratioText(n.ratios.metricsScraped), `scrapes/s: ${list(n.metricsScraped.scrapesPerSecond)}`),
    row(`${n.streamsPerProcess} live streams (both caps reached)`, n.liveStreams, ratioText(n.ratios.liveStreams), `events pushed during the run: ${list(n.liveStreams.events)}`),
  ].join('\n');
}
