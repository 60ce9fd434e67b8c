/**
 * The reserve script's cost in redis-server, counted in instructions rather than timed: a redis-server of
 * the bench's own runs under valgrind's callgrind, whose counter is zeroed before each path's calls and
 * dumped after them (callgrind_control -z / -d). Time on a shared VM moves by a fifth within the hour;
 * the instructions a call costs move by a few percent at most (how many requests Redis reads per wakeup
 * still depends on timing), so a cut of some percent in the script shows here when no timed run can. The count is Redis's whole work for a call: reading the request, the
 * script and its commands, the reply, and its share of the event loop.
 *
 * Needs valgrind (Debian's package); without it the part says so and counts nothing.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis } from '@flashsale/redis-store';
import { startRedisServer } from '@flashsale/harness';
import { median } from './load.ts';
import { benchSale, dropSale, EXPECTED_CODE, reserveLoad, type ScriptPath } from './reserve-load.ts';

export interface ScriptInstructions {
  /** Calls counted per path and round. */
  calls: number;
  rounds: number;
  /** Instructions per call, the median of the rounds, per path. */
  perCall: Record<ScriptPath, number>;
  /** Every round's count per call, to show how steady it is. */
  runs: Record<ScriptPath, number[]>;
}

/** Whether valgrind's callgrind and its control tool are on PATH. */
export function callgrindAvailable(): boolean {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * `calls` reserve calls of each path (accept: a new buyer each, ample stock; duplicate: buyers who hold a
 * reservation; sold out: a sale whose one unit is taken), `rounds` times, paths alternated, on a
 * redis-server under callgrind; the instructions each call cost it.
 */
export async function reserveInstructions(
  prefix: string,
  { calls, rounds }: { calls: number; rounds: number },
): Promise<ScriptInstructions> {
  const dir = mkdtempSync(join(tmpdir(), 'flashsale-callgrind-'));
  // serverCron once a second rather than ten times: its work is counted too, and it depends on how long
  // the calls took (valgrind slows Redis fifty times), not on the calls.
  const server = await startRedisServer({
    wrapper: ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`],
    args: ['--hz', '1', '--dynamic-hz', 'no'],
  });
  const client = createRedis(server.url);
  try {
    const pid = Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]);
    const control = (...args: string[]) => execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore' });
    const paths: ScriptPath[] = ['accept', 'duplicate', 'sold_out'];
    const runs: Record<ScriptPath, number[]> = { accept: [], duplicate: [], sold_out: [] };
    let dumps = 0;
    for (let round = 0; round < rounds; round += 1) {
      for (const path of paths) {
        const { saleId, keys } = await benchSale(client, prefix, 1, path === 'sold_out' ? 1 : 100_000_000);
        try {
          const buyer = (i: number) => ({ saleId, keys, buyer: `b${i}` });
          const prebuy = path === 'sold_out' ? 1 : path === 'duplicate' ? calls : 0;
          const load = { batch: 500, inFlight: 1, seconds: undefined };
          if (prebuy > 0)
            await reserveLoad(client, [], {
              ...load,
              calls: prebuy,
              expect: 1,
              call: (i) => (path === 'sold_out' ? { saleId, keys, buyer: 'someone' } : buyer(i)),
            });
          control('-z');
          await reserveLoad(client, [], { ...load, calls, expect: EXPECTED_CODE[path], call: buyer });
          control('-d', `${path}-${round}`);
          dumps += 1;
          runs[path].push(instructionsOfDump(dir, pid, dumps) / calls);
        } finally {
          await dropSale(client, keys);
        }
      }
    }
    const perCall = Object.fromEntries(paths.map((path) => [path, Math.round(median(runs[path]))])) as Record<ScriptPath, number>;
    return {
      calls,
      rounds,
      perCall,
      runs: Object.fromEntries(paths.map((path) => [path, runs[path].map(Math.round)])) as Record<ScriptPath, number[]>,
    };
  } finally {
    await client.quit();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The instructions of callgrind's `n`th dump of process `pid` (its `summary:` line). */
function instructionsOfDump(dir: string, pid: number, n: number): number {
  const file = readdirSync(dir).find((name) => name === `callgrind.out.${pid}.${n}`);
  if (!file) throw new Error(`callgrind wrote no dump ${n} for redis-server ${pid} in ${dir}`);
  const summary = /^summary:\s+(\d+)/m.exec(readFileSync(join(dir, file), 'utf8'))?.[1];
  if (summary === undefined) throw new Error(`callgrind's dump ${file} has no summary line`);
  return Number(summary);
}
