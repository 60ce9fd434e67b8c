/**
 * What bench/run.ts hands a part that lives in a file of its own (replica-wait, door, neighbours): the
 * run's settings, stores and buyers, and its measuring tools, so a part measures the way the purchase
 * part does (same check, same alternation, same summary) without reaching into run.ts.
 */
import type { Config } from '@flashsale/config';
import type { PrismaClient } from '@flashsale/order-store';
import type { SaleStore, ScriptedRedis } from '@flashsale/redis-store';
import type { LoadResult } from './load-result.ts';
import { median } from './load.ts';
import type { BenchSettings } from './options.ts';
import type { PathName, RunInfo, Summary } from './summary.ts';
import type { BenchServer } from './servers.ts';

/**
 * A load run, the CPU the server under load spent per request answered (its own and its children's), and
 * the box's one-minute load average when it started (other tenants of a shared machine show there).
 */
export type Run = LoadResult & { cpuUsPerRequest: number; loadAverage: number };

export interface MeasureOptions {
  /** The Redis the sale lives on (default the run's). */
  client?: ScriptedRedis;
  /** A sale the part prepared (default: a fresh one for the path, as the purchase part's). */
  saleId?: number;
  /** The buyers the load goes through, in turn (default all of the run's). */
  buyers?: { id: string; token: string }[];
  /**
   * Answers that are not a 2xx but took a reservation all the same (a 503 of REDIS_WAIT_REPLICAS: the
   * reservation stands on the primary): the accept check then counts every answer as a reservation.
   */
  refusalsHoldReservations?: boolean;
}

export interface PartContext {
  settings: BenchSettings;
  config: Config;
  /** The environment every server of the run gets (prefix, stores, secret). */
  env: NodeJS.ProcessEnv;
  prefix: string;
  redis: ScriptedRedis;
  /** `redis` bound to the run's prefix. */
  store: SaleStore;
  /** The run's prefix bound to another client (a Redis of a part's own). */
  storeOn(client: ScriptedRedis): SaleStore;
  prisma: PrismaClient;
  /** The run's buyers, each with a signed token; no accept run meets one twice. */
  buyers: { id: string; token: string }[];
  log(text: string): void;
  /** Stopped at the end of the bench whatever happens (a part pushes what it starts). */
  stops: (() => Promise<unknown>)[];
  /** One checked load run of `path` against `server` (run.ts's measure). */
  measure(server: BenchServer, path: PathName, options?: MeasureOptions): Promise<Run>;
  /** One round robin of the contenders per round (A B C A B C), every run kept. */
  alternate<K extends string>(contenders: Record<K, () => Promise<Run>>): Promise<Record<K, Run[]>>;
  summary(runs: Run[]): Summary;
  /** A second of accept load against `server`, on a sale of `client` (default the run's Redis). */
  warmUp(server: BenchServer, client?: ScriptedRedis): Promise<void>;
}

/** The rounds' ratios of `of` to `to` req/s (the contenders of a round run back to back): their median, lowest and highest. */
export function roundRatios(of: Run[], to: Run[]): RoundRatios {
  const each = of.map((run, i) => run.rps / to[i]!.rps);
  return { median: Number(median(each).toFixed(3)), low: Number(Math.min(...each).toFixed(3)), high: Number(Math.max(...each).toFixed(3)) };
}

export interface RoundRatios {
  median: number;
  low: number;
  high: number;
}

/** A ratio as the tables print it: the median in bold, the rounds' spread after it. */
export const ratioText = (r: RoundRatios) => `**${r.median.toFixed(2)}** (rounds ${r.low.toFixed(2)} to ${r.high.toFixed(2)})`;

/** The first line of a part's section: when, what command, on which code and machine, how measured. */
export function runLine(r: RunInfo): string {
  return `${r.date.slice(0, 10)}, \`${r.command}\` on ${r.commit}, load by ${r.loadGenerator}, ${r.settings.connections} connections, ${r.settings.seconds} s per run, ${r.settings.rounds} rounds alternating the contenders; medians. Machine: ${r.machine}; Node ${r.node}.`;
}

/** A run's one-minute load averages at the start of each of its runs, lowest to highest. */
export const loadRange = (runs: { loadAverage: number }[]) => {
  const values = runs.map((r) => r.loadAverage);
  return `${Math.min(...values)} to ${Math.max(...values)}`;
};

export type Admission = { mode: 'open' } | { mode: 'queue'; admitPerSecond: number; admissionTtlSeconds: number; preQueueSeconds: number };

/** A live sale of 100,000,000 units created as an operator does (POST /api/admin/sales); its id. */
export async function operatorSale(part: PartContext, gateway: BenchServer, label: string, admission?: Admission): Promise<number> {
  const now = Date.now();
  const res = await fetch(`${gateway.url}/api/admin/sales`, {
    method: 'POST',
    headers: { authorization: `Bearer ${part.config.ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: `${part.prefix} ${label}`,
      stock: 100_000_000,
      perUserLimit: 1,
      startsAt: new Date(now - 60_000).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
      ...(admission && { admission }),
    }),
  });
  const body = (await res.json()) as { id?: number };
  if (res.status !== 201 || body.id === undefined)
    throw new Error(`creating the sale ${label} answered ${res.status} ${JSON.stringify(body)}`);
  return body.id;
}
