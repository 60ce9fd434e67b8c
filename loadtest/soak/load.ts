/**
 * The soak's two loads, both every request a new buyer on the accept path:
 * - closed loop, the default: wrk -t1 -c<connections>, fed by a process that signs the buyers as wrk
 *   goes (feed-writer.ts through a FIFO), as many requests as the system answers;
 * - open loop, `--rate R`: a pacer in this process that starts R purchases a second whatever the answers
 *   take, over the harness's HTTP client (undici). wrk cannot pace (it is closed loop), and the project's
 *   arrival runner (loadtest/runner/arrival-load.ts) keeps every latency and every reservation id of the
 *   run in memory, which a run of millions of requests cannot afford; this one keeps a fixed-size
 *   histogram and counts.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHttpClient, SOURCE_NODE_ARGS, spawnInGroup } from '@flashsale/harness';
import { LogHistogram } from './analysis.ts';
import { purchaseRequest, signBuyers, type Buyer, type BuyerFeedOptions } from './buyer-feed.ts';
import type { ClientSummary, Sample } from './sample.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LUA = fileURLToPath(new URL('./purchase-feed.lua', import.meta.url));

export interface LoadOptions extends BuyerFeedOptions {
  url: string;
  saleId: number;
  seconds: number;
  connections: number;
}

/** A load ready to go (its feed signed and waiting): start() begins it at once. */
export interface PreparedLoad {
  /** The command line, for the report. */
  description: string;
  start(): RunningLoad;
  /** Lets go of what prepare made, when the load is never started. */
  cancel(): void;
}

export interface RunningLoad {
  /** The processes that make the load (their CPU and memory are sampled as "load generator"). */
  pids(): number[];
  /** The pacer's view of the interval since the last call (--rate only). */
  takeInterval?(): NonNullable<Sample['client']>;
  /** Ends the load before its time (Ctrl-C). */
  stop(): void;
  /** Resolves when the load is over. */
  done: Promise<ClientSummary & { notes: string[] }>;
}

interface WrkReport {
  requests: number;
  durationUs: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p50: number; p90: number; p99: number; max: number };
}

/**
 * wrk -t1 -c<connections> -d<seconds>s with purchase-feed.lua, fed by feed-writer.ts through a FIFO;
 * resolves once the feed writer has its first requests signed, so wrk starts at full speed.
 */
export async function prepareWrkLoad(options: LoadOptions): Promise<PreparedLoad> {
  const dir = mkdtempSync(join(tmpdir(), 'soak-feed-'));
  const fifo = join(dir, 'feed');
  execFileSync('mkfifo', [fifo]);
  const host = new URL(options.url).host;
  const recordLength = purchaseRequest(host, options.saleId, signBuyers(options, 0, 1)[0]!.token).length;
  const writer = spawnInGroup(process.execPath, [...SOURCE_NODE_ARGS, 'loadtest/soak/feed-writer.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      FEED_PATH: fifo,
      FEED_RUN_ID: options.runId,
      FEED_SALE_ID: String(options.saleId),
      FEED_HOST: host,
      FEED_RECORD_LENGTH: String(recordLength),
      FEED_TTL_SECONDS: String(options.ttlSeconds),
      AUTH_SECRET: options.secret,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let writerErrors = '';
  writer.stderr.setEncoding('utf8').on('data', (chunk: string) => (writerErrors += chunk));
  const release = () => {
    writer.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  await new Promise<void>((resolve, reject) => {
    let said = '';
    writer.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      said += chunk;
      if (said.includes('ready\n')) resolve();
    });
    writer.once('exit', (code) => reject(new Error(`the feed writer exited (${code}) before it was ready: ${writerErrors}`)));
  }).catch((error: unknown) => {
    release();
    throw error;
  });
  const seconds = Math.max(1, Math.round(options.seconds));
  const args = [
    '-t1',
    `-c${options.connections}`,
    `-d${seconds}s`,
    '--timeout',
    '10s',
    '--latency',
    '-s',
    LUA,
    options.url,
    '--',
    fifo,
    String(recordLength),
  ];
  const description = `wrk -t1 -c${options.connections} -d${seconds}s --timeout 10s -s loadtest/soak/purchase-feed.lua (requests signed as it goes by feed-writer.ts)`;
  return {
    description,
    cancel: release,
    start() {
      const wrk = spawnInGroup('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      wrk.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      wrk.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const done = new Promise<ClientSummary & { notes: string[] }>((resolve, reject) => {
        wrk.once('error', reject);
        wrk.once('exit', (code) => {
          release();
          const line = stdout.trim().split('\n').at(-1) ?? '';
          let report: WrkReport;
          try {
            report = JSON.parse(line) as WrkReport;
          } catch {
            return reject(new Error(`wrk (exit ${code}) printed no report:\n${stdout}\n${stderr}\n${writerErrors}`));
          }
          const { errors } = report;
          resolve({
            generator: description,
            requests: report.requests,
            ok: report.requests - errors.status,
            refused: errors.status,
            errors: errors.connect + errors.read + errors.write + errors.timeout,
            dropped: 0,
            seconds: report.durationUs / 1e6,
            p50Ms: report.latencyUs.p50 / 1000,
            p99Ms: report.latencyUs.p99 / 1000,
            maxMs: report.latencyUs.max / 1000,
            notes: [stderr, writerErrors].map((text) => text.trim()).filter(Boolean),
          });
        });
      });
      return {
        pids: () => [wrk.pid, writer.pid].filter((pid): pid is number => pid !== undefined && pid > 0),
        // wrk ends its run on SIGINT and still prints its report.
        stop: () => void wrk.kill('SIGINT'),
        done,
      };
    },
  };
}

const TICK_MS = 2;
const SIGN_AHEAD = 1024;

/**
 * The open-loop pacer: purchase i starts at i / rate seconds after the start (late ticks catch up at
 * once, so the rate holds whatever the timer does), over `connections` keep-alive connections; an
 * arrival that finds `maxInFlight` requests already waiting is dropped and counted, as k6 does.
 */
export function preparePacedLoad(options: LoadOptions & { rate: number; maxInFlight: number }): PreparedLoad {
  const description = `Node pacer (loadtest/soak/load.ts): ${options.rate} purchases/s open loop, ${options.connections} connections, at most ${options.maxInFlight} in flight`;
  return { description, cancel: () => undefined, start: () => startPacedLoad(options, description) };
}

function startPacedLoad(options: LoadOptions & { rate: number; maxInFlight: number }, description: string): RunningLoad {
  const client = createHttpClient(options.url, options.connections);
  const path = `/api/sales/${options.saleId}/purchase`;
  const whole = new LogHistogram();
  let interval = new LogHistogram();
  const totals = { sent: 0, ok: 0, refused: 0, errors: 0, dropped: 0 };
  let window = { sent: 0, answered: 0, dropped: 0, errors: 0 };
  let inFlight = 0;
  let stopped = false;
  let signed: Buyer[] = [];
  let signedFrom = 0;
  let nextBuyer = 0;
  const buyer = (): Buyer => {
    if (nextBuyer - signedFrom >= signed.length) {
      signedFrom = nextBuyer;
      signed = signBuyers(options, nextBuyer, SIGN_AHEAD);
    }
    return signed[nextBuyer++ - signedFrom]!;
  };
  const pending = new Set<Promise<void>>();
  const fire = () => {
    const { token } = buyer();
    totals.sent += 1;
    window.sent += 1;
    inFlight += 1;
    const request = client
      .send('POST', path, { headers: { authorization: `Bearer ${token}` } })
      .then(({ status, latencyMs }) => {
        whole.record(latencyMs);
        interval.record(latencyMs);
        window.answered += 1;
        if (status >= 200 && status < 300) totals.ok += 1;
        else totals.refused += 1;
      })
      .catch(() => {
        totals.errors += 1;
        window.errors += 1;
      })
      .finally(() => {
        inFlight -= 1;
        pending.delete(request);
      });
    pending.add(request);
  };
  const started = performance.now();
  const done = (async () => {
    let arrivals = 0;
    for (;;) {
      const elapsed = (performance.now() - started) / 1000;
      if (stopped || elapsed >= options.seconds) break;
      const due = Math.floor(elapsed * options.rate);
      while (arrivals < due) {
        arrivals += 1;
        if (inFlight >= options.maxInFlight) {
          totals.dropped += 1;
          window.dropped += 1;
        } else fire();
      }
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(pending);
    client.close();
    return {
      generator: description,
      requests: totals.sent,
      ok: totals.ok,
      refused: totals.refused,
      errors: totals.errors,
      dropped: totals.dropped,
      seconds,
      p50Ms: whole.percentile(50),
      p99Ms: whole.percentile(99),
      maxMs: whole.percentile(100),
      notes: [],
    };
  })();
  return {
    pids: () => [process.pid],
    takeInterval() {
      const taken = { ...window, p50Ms: interval.percentile(50), p99Ms: interval.percentile(99) };
      window = { sent: 0, answered: 0, dropped: 0, errors: 0 };
      interval = new LogHistogram();
      return taken;
    },
    stop: () => void (stopped = true),
    done,
  };
}
