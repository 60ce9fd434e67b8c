import type { ChildProcess } from 'node:child_process';
import { killGroup } from './process-group.ts';

/**
 * Sends `signal` to a child that is still running and resolves once it has exited; a SIGKILL takes its
 * whole process group (spawnInGroup) with it.
 */
export async function killChild(child: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  // A child whose spawn failed has no pid and will never emit 'exit'.
  if (!child || child.pid === undefined) return;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }
  if (signal === 'SIGKILL') killGroup(child);
}
