/**
 * The `replica-wait` part: what REDIS_WAIT_REPLICAS costs the accept path. A redis-server
 * primary of the bench's own with two real replicas (`--replicaof`, loopback), and three gateway
 * processes on that primary: WAIT off (REDIS_WAIT_REPLICAS=0, no WAIT sent), WAIT 1 and WAIT 2 (every
 * replica), the timeout at its default. The replicas copy every write whichever gateway made it, so the
 * three contenders run with the same replication going on; only the WAIT differs.
 */
import { startRedisServer } from '@flashsale/harness';
import { createRedis, type ScriptedRedis } from '@flashsale/redis-store';
import { startGatewayProcess } from './servers.ts';
import { median } from './load.ts';
import { loadRange, ratioText, roundRatios, runLine, type PartContext, type RoundRatios, type Run } from './part-context.ts';
import type { RunInfo, Summary } from './summary.ts';

const REPLICAS = 2;
/** How long the replicas have to be in sync with the primary before the part gives up. */
const SYNC_TIMEOUT_MS = 60_000;

export interface ReplicaWaitResults {
  replicas: number;
  waitTimeoutMs: number;
  loadAverages: string;
  /** By REDIS_WAIT_REPLICAS ('0' is WAIT off). */
  byWait: Record<string, Summary & { acceptsPerSecond: number; notAcknowledged: number }>;
  /** The rounds' ratios of accepts/s to WAIT off's. */
  ratios: Record<string, RoundRatios>;
}

/** Until every replica's link to the primary is up and it has caught up (INFO replication). */
async function replicasInSync(primary: ScriptedRedis): Promise<void> {
  const deadline = Date.now() + SYNC_TIMEOUT_MS;
  for (;;) {
    const info = await primary.info('replication');
    const offset = Number(/^master_repl_offset:(\d+)/m.exec(info)?.[1] ?? -1);
    const online = [...info.matchAll(/^slave\d+:.*state=online,offset=(\d+)/gm)].filter((m) => Number(m[1]) === offset);
    if (online.length === REPLICAS) return;
    if (Date.now() > deadline)
      throw new Error(`replica-wait: ${online.length} of ${REPLICAS} replicas in sync after ${SYNC_TIMEOUT_MS} ms:\n${info}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function replicaWaitPart(part: PartContext): Promise<ReplicaWaitResults> {
  const { env, log, stops, measure, alternate, summary, warmUp, config } = part;
  log(`REDIS_WAIT_REPLICAS off, 1 and ${REPLICAS}: accept path, a primary with ${REPLICAS} replicas of the bench's own`);
  const primary = await startRedisServer();
  stops.push(() => primary.stop());
  for (let i = 0; i < REPLICAS; i += 1) {
    const replica = await startRedisServer({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    stops.push(() => replica.stop());
  }
  const client = createRedis(primary.url);
  await replicasInSync(client);
  const waits = ['0', '1', String(REPLICAS)];
  const gateways = Object.fromEntries(
    await Promise.all(
      waits.map(async (wait) => [wait, await startGatewayProcess({ ...env, REDIS_URL: primary.url, REDIS_WAIT_REPLICAS: wait })] as const),
    ),
  );
  for (const gateway of Object.values(gateways)) {
    stops.push(gateway.stop);
    await warmUp(gateway);
  }
  // A 503 of WAIT (fewer replicas acknowledged within REDIS_WAIT_TIMEOUT_MS) leaves the reservation on
  // the primary: the check counts it as one, and the table counts such answers apart.
  const runs = await alternate(
    Object.fromEntries(
      waits.map((wait) => [wait, () => measure(gateways[wait]!, 'accept', { client, refusalsHoldReservations: wait !== '0' })]),
    ) as Record<string, () => Promise<Run>>,
  );
  await Promise.all(Object.values(gateways).map((gateway) => gateway.stop()));
  await client.quit();
  const accepts = (r: Run) => (r.rps * r.ok) / r.requests;
  const acceptRuns = (of: Run[]) => of.map((r) => ({ ...r, rps: accepts(r) }));
  const byWait = Object.fromEntries(
    waits.map((wait) => {
      return [
        wait,
        {
          ...summary(runs[wait]!),
          acceptsPerSecond: Math.round(median(runs[wait]!.map(accepts))),
          notAcknowledged: runs[wait]!.reduce((sum, r) => sum + r.refused, 0),
        },
      ];
    }),
  );
  return {
    replicas: REPLICAS,
    waitTimeoutMs: config.REDIS_WAIT_TIMEOUT_MS,
    loadAverages: loadRange(Object.values(runs).flat()),
    byWait,
    ratios: Object.fromEntries(waits.slice(1).map((wait) => [wait, roundRatios(acceptRuns(runs[wait]!), acceptRuns(runs['0']!))])),
  };
}

/** The section of docs/BENCHMARKS.md between the replica-wait markers. */
export function replicaWaitMarkdown(r: RunInfo, w: ReplicaWaitResults): string {
  const row = (wait: string, label: string) => {
    const s = w.byWait[wait]!;
    return `| ${label} | ${s.acceptsPerSecond} | ${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} | ${s.cpuUsPerRequest?.toFixed(0)} | ${s.notAcknowledged} | ${wait === '0' ? '1' : ratioText(w.ratios[wait]!)} |`;
  };
  return [
    runLine(r),
    '',
    `A redis-server primary with ${w.replicas} replicas (loopback, no persistence, all the bench's own), one gateway process per setting on it, REDIS_WAIT_TIMEOUT_MS ${w.waitTimeoutMs}; load average ${w.loadAverages} at the start of the runs.`,
    '',
    '| REDIS_WAIT_REPLICAS | accepts/s | p50 / p99 ms | gateway CPU µs/request | 503 not acknowledged in time (all rounds) | accepts/s / WAIT off |',
    '|---|---|---|---|---|---|',
    row('0', '0 (off)'),
    ...Object.keys(w.byWait)
      .filter((wait) => wait !== '0')
      .map((wait) => row(wait, wait === String(w.replicas) ? `${wait} (every replica)` : wait)),
  ].join('\n');
}
