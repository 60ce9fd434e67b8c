import type { Command } from 'ioredis';

/** What a client offers that deadlines hook into: ioredis's Redis and Cluster alike. */
interface CommandSender {
  sendCommand(command: Command, ...rest: never[]): unknown;
}

/** ioredis's own message for a command past its commandTimeout, which isRedisUnavailable recognises. */
const COMMAND_TIMED_OUT = 'Command timed out';

/** How often the deadlines are checked while commands wait. */
const SWEEP_EVERY_MS = 10;

/** The least length (behind an unanswered front) at which the queue is compacted. */
export const MIN_COMPACTION = 256;

/** Per client, how many of its commands the deadlines hold now. */
const heldCounts = new WeakMap<object, () => number>();

/**
 * Gives every command `client` issues a deadline `ms` after it is issued: a command not answered by then
 * fails with ioredis's own `Command timed out` (Redis may still run it later, as with ioredis's
 * commandTimeout). The deadline runs from the call, whatever the command waits for: a reconnect, a
 * cluster with no node for its slot yet, the retries of CLUSTERDOWN or a failover (ioredis's Cluster
 * starts its commandTimeout only when a node's connection takes the command, issue #1604).
 *
 * Why not ioredis's commandTimeout: it arms a timer per command and clears it on the reply, deleting
 * the timer's property from the command. In the purchase path's profile that was the largest single cost
 * the gateway adds to its one EVALSHA (timer insert, clear and unenroll, and a command object that the
 * delete leaves slower to read). Here the commands wait in issue order in one queue, and one timer
 * drops those answered and fails those past due: a queue push and a clock read per command. All
 * deadlines are the same length, so the queue is in deadline order too.
 *
 * The timer runs while commands wait, every SWEEP_EVERY_MS: a command fails within that much past its
 * deadline. Answered commands must leave soon too, young enough to die in the garbage collector's young
 * generation: kept for the whole deadline, a crowd's commands are promoted and cost the old generation's
 * collections. Each sweep drops the answered ones at the front of the queue, up to the first one still
 * unanswered. One can stay unanswered while those behind it are answered: a command answered with an
 * error (ioredis does not mark it; it stays until its deadline, when failing it again changes nothing),
 * one sent to a slower node of a cluster, a blocking read. Behind such a one the queue is compacted
 * (every answered command dropped) whenever it has doubled since it last was, so each command is walked
 * a few times at most, even while nothing is answered at all (Redis away). Swept from the front only, one
 * error reply (XINFO on a stream not yet made, CLIENT SETINFO on a Redis before 7.2) once kept a whole
 * deadline of a crowd's EVALSHAs alive behind it: the gateway's young-generation collections took 6 ms
 * instead of 1.6 and promoted 4 MB each (measured under a crowd: CHANGELOG.md).
 */
export function armCommandDeadlines(client: CommandSender, ms: number): void {
  let commands: Command[] = [];
  let deadlines: number[] = [];
  let head = 0;
  // The queue's length (from its head) at which it is next compacted.
  let compactAt = MIN_COMPACTION;
  let timer: NodeJS.Timeout | undefined;

  const compact = () => {
    const now = performance.now();
    const keptCommands: Command[] = [];
    const keptDeadlines: number[] = [];
    for (let i = head; i < commands.length; i += 1) {
      const command = commands[i]!;
      if (command.isResolved) continue;
      if (deadlines[i]! <= now) {
        command.reject(new Error(COMMAND_TIMED_OUT));
        continue;
      }
      keptCommands.push(command);
      keptDeadlines.push(deadlines[i]!);
    }
    commands = keptCommands;
    deadlines = keptDeadlines;
    head = 0;
    compactAt = Math.max(MIN_COMPACTION, 2 * keptCommands.length);
  };

  const sweep = () => {
    timer = undefined;
    const now = performance.now();
    while (head < commands.length) {
      const command = commands[head]!;
      if (!command.isResolved) {
        if (deadlines[head]! > now) break;
        command.reject(new Error(COMMAND_TIMED_OUT));
      }
      commands[head] = undefined as unknown as Command;
      head += 1;
    }
    if (head === commands.length) {
      commands = [];
      deadlines = [];
      head = 0;
      compactAt = MIN_COMPACTION;
      return;
    }
    // Compacted when the queue behind its front has doubled, or when the settled front is over half of
    // the arrays (which would otherwise only grow while some command is always in flight).
    if (commands.length - head >= compactAt || (head > 1024 && head * 2 > commands.length)) compact();
    if (commands.length > 0) arm();
  };
  const arm = () => {
    timer = setTimeout(sweep, SWEEP_EVERY_MS);
    // A client left open must not keep its process alive for its deadlines.
    timer.unref();
  };

  const send = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
  client.sendCommand = (command: Command, ...rest: unknown[]) => {
    commands.push(command);
    deadlines.push(performance.now() + ms);
    if (timer === undefined) arm();
    return send(command, ...rest);
  };
  heldCounts.set(client, () => commands.length - head);
}

/** How many commands of `client` its deadlines hold now (undefined: none armed); for tests and diagnosis. */
export function commandsAwaitingDeadline(client: object): number | undefined {
  return heldCounts.get(client)?.();
}
