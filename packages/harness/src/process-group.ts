import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

// Every process a test or a tool starts leads a process group of its own, so whatever it starts in
// turn (a gateway's cluster workers, npm's shell and node) can be stopped with it, and no test's
// failure leaves a gateway with eight children running after the run. The groups are remembered until
// they are killed: killing a group's leader does not end the rest of the group.

const groups = new Set<number>();
let cleanupInstalled = false;

/** `spawn` (same arguments, same typing) in a process group of its own, killed with everything in it when this process ends. */
export const spawnInGroup = ((command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess => {
  installCleanup();
  const child = spawn(command, args, { ...options, detached: true });
  if (child.pid !== undefined) groups.add(child.pid);
  return child;
}) as typeof spawn;

/** Sends `signal` to every process of `child`'s group (its leader and all it started); false once none is left. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    groups.delete(child.pid);
    return false;
  }
}

/** SIGKILLs `child`'s whole group and forgets it. */
export function killGroup(child: ChildProcess): void {
  signalGroup(child, 'SIGKILL');
  if (child.pid !== undefined) groups.delete(child.pid);
}

/** SIGKILLs every group started here and not yet killed (synchronous: safe in an `exit` handler). */
export function killAllGroups(): void {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  }
  groups.clear();
}

/**
 * Kills every group when this process exits, and when it is interrupted: on SIGINT, SIGTERM or SIGHUP
 * the groups die first, then the signal takes its usual course (exits the process) unless the program
 * has a handler of its own for it, which then decides.
 */
function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.once('exit', killAllGroups);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAllGroups();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}
