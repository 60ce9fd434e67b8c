import { SOURCE_NODE_ARGS, spawnInGroup } from '@flashsale/harness';

/** What a finished command gave: its exit code and its whole output. */
export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, with `env` over this process's environment. */
export function runProcess(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawnInGroup(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A script of the repository run from its TypeScript sources, as npm runs it (with `args` after `--`). */
export function runScript(script: string, env: NodeJS.ProcessEnv = {}, args: string[] = []): Promise<ProcessResult> {
  return runProcess(process.execPath, [...SOURCE_NODE_ARGS, script, ...args], env);
}
