import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The closed loop (bench/wrk/purchase.lua) and the paced open loop (bench/wrk/paced-purchase.lua). */
export const WRK_SCRIPTS = {
  closed: fileURLToPath(new URL('./wrk/purchase.lua', import.meta.url)),
  open: fileURLToPath(new URL('./wrk/paced-purchase.lua', import.meta.url)),
};

export interface WrkOutcome {
  requests: number;
  durationUs: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p50: number; p99: number };
  /** wrk's own CPU, user + system, building its requests included. */
  cpuSeconds: number;
}

/** wrk -t1 under sh, whose `times` then prints wrk's CPU (user, system) once it has exited, when /proc no longer has it. */
export function runWrk(url: string, script: string, args: string[], connections: number, seconds: number): Promise<WrkOutcome> {
  const wrkArgs = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url, '--', ...args];
  const child = spawn('sh', ['-c', 'wrk "$@"; status=$?; times >&2; exit $status', 'wrk', ...wrkArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      // `times`: the shell's own user and system time on one line, its children's on the next ("0m1.234s 0m0.567s").
      const children = err.trim().split('\n').at(-1) ?? '';
      const times = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
      if (code !== 0 || times.length !== 2) return reject(new Error(`wrk failed (${code}): ${out}\n${err}`));
      try {
        resolve({
          ...(JSON.parse(out.trim().split('\n').at(-1) ?? '') as Omit<WrkOutcome, 'cpuSeconds'>),
          cpuSeconds: times[0]! + times[1]!,
        });
      } catch {
        reject(new Error(`wrk printed no report:\n${out}\n${err}`));
      }
    });
  });
}
