/**
 * One sample of a running system: each process's RSS and CPU from /proc, Redis's memory and the sale's
 * stream from Redis, the gateway's purchase counters and latency histogram from its `/metrics`, the units
 * written from MySQL.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Connection } from 'mariadb';
import type { SaleRedis, ScriptedRedis } from '@flashsale/redis-store';
import { parseGatewayMetrics } from './analysis.ts';
import type { ProcessReading, Sample } from './sample.ts';

/** USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;
const MiB = 1024 * 1024;

function procFile(pid: number, name: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch {
    return undefined;
  }
}

/** The children of a process: of each of its threads (a child belongs to the thread that forked it). */
function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tasks.flatMap((tid) => (procFile(pid, `task/${tid}/children`) ?? '').trim().split(/\s+/).filter(Boolean).map(Number));
}

/** A process and all its descendants (tsx or a cluster may start children: the code may run in any of them). */
export function processTree(pid: number): number[] {
  const seen = [pid];
  for (let i = 0; i < seen.length; i += 1) for (const child of childrenOf(seen[i]!)) if (!seen.includes(child)) seen.push(child);
  return seen;
}

/** RSS (VmRSS) and CPU seconds (utime + stime) of the processes given, summed; undefined when none is alive. */
export function readProcesses(pids: readonly number[]): ProcessReading | undefined {
  let alive = false;
  let rssKiB = 0;
  let ticks = 0;
  for (const pid of pids) {
    const status = procFile(pid, 'status');
    const stat = procFile(pid, 'stat');
    // Gone, or a zombie not reaped yet (it has no memory left to read).
    if (status === undefined || stat === undefined || /^State:\s+Z/m.test(status)) continue;
    alive = true;
    rssKiB += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
    // Fields 14 and 15 (utime, stime), counted after the command name, which may itself hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
  }
  return alive ? { rssMiB: rssKiB / 1024, cpuSeconds: ticks / TICKS_PER_SECOND } : undefined;
}

/** What a sample reads a process group from: its pids, with or without their descendants. */
export interface ProcessSource {
  pids(): number[];
  descendants: boolean;
}

export interface SamplerTarget {
  redis: ScriptedRedis;
  /** A connection to the run's database, for the sale's sold_units and MariaDB's CPU. */
  db: Connection;
  /** The sale's records, bound to the run's prefix. */
  sale: SaleRedis;
  gatewayMetricsUrl: string;
  processes: Record<string, ProcessSource>;
}

function infoField(info: string, name: string): number | undefined {
  const match = new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info);
  return match ? Number(match[1]) : undefined;
}

/**
 * Reads everything a sample holds; a part that fails is left out of this sample (and said in `failures`)
 * rather than ending the run.
 */
export async function takeSample(target: SamplerTarget, t: number, failures: string[]): Promise<Sample> {
  const sample: Sample = { t, at: new Date().toISOString(), processes: {} };
  for (const [name, source] of Object.entries(target.processes)) {
    const pids = source.pids();
    const reading = readProcesses(source.descendants ? pids.flatMap(processTree) : pids);
    if (reading) sample.processes[name] = reading;
  }
  const { keys } = target.sale;
  const attempt = async (what: string, read: () => Promise<void>) => {
    try {
      await read();
    } catch (error) {
      failures.push(`t=${t.toFixed(1)} s: ${what}: ${(error as Error).message}`);
    }
  };
  await Promise.all([
    attempt('Redis', async () => {
      const [memory, cpu, buyers, stream, length, backlog] = await Promise.all([
        target.redis.info('memory'),
        target.redis.info('cpu'),
        target.redis.memory('USAGE', keys.buyers),
        target.redis.memory('USAGE', keys.stream),
        target.redis.xlen(keys.stream),
        target.sale.backlog(),
      ]);
      sample.redis = {
        usedMiB: (infoField(memory, 'used_memory') ?? 0) / MiB,
        rssMiB: (infoField(memory, 'used_memory_rss') ?? 0) / MiB,
        saleKeysMiB: (Number(buyers ?? 0) + Number(stream ?? 0)) / MiB,
      };
      // Redis's own account of its CPU (getrusage), its RSS from INFO: no pid needed, local or not.
      sample.processes.redis = {
        rssMiB: sample.redis.rssMiB,
        cpuSeconds: (infoField(cpu, 'used_cpu_user') ?? 0) + (infoField(cpu, 'used_cpu_sys') ?? 0),
      };
      sample.stream = { length, lag: backlog.lag, pending: backlog.pending, deadLettered: backlog.deadLettered };
    }),
    attempt('gateway /metrics', async () => {
      const res = await fetch(target.gatewayMetricsUrl, { signal: AbortSignal.timeout(4000) });
      if (!res.ok) throw new Error(`status ${res.status}`);
      sample.gateway = parseGatewayMetrics(await res.text());
    }),
    attempt('MySQL', async () => {
      const [row] = await target.db.query<{ sold: number | bigint }[]>('SELECT sold_units AS sold FROM sales WHERE id = ?', [
        target.sale.saleId,
      ]);
      sample.unitsWritten = Number(row?.sold ?? 0);
    }),
  ]);
  return sample;
}

/** MariaDB's pid when it runs on this machine and says where its pid file is (for its CPU and RSS), else undefined. */
export async function mariadbPid(db: Connection): Promise<number | undefined> {
  try {
    const [row] = await db.query<{ file: string | null }[]>('SELECT @@pid_file AS file');
    const pid = Number(readFileSync(row?.file ?? '', 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && procFile(pid, 'stat') !== undefined ? pid : undefined;
  } catch {
    return undefined;
  }
}
