import type { Command } from 'ioredis';

/** What a client offers that deadlines hook into: ioredis's Redis and Cluster alike. */
interface CommandSender {
  sendCommand(command: Command, ...rest: never[]): unknown;
}

/** ioredis's own message for a command past its commandTimeout, which isRedisUnavailable recognises. */
const COMMAND_TIMED_OUT = 'Command timed out';

/** How often the deadlines are checked while commands wait. */
const SWEEP_EVERY_MS = 10;

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
 * deadline, and an answered one leaves the queue within it, young enough to die in the garbage
 * collector's young generation (kept for the whole deadline, a crowd's commands would be promoted and
 * cost the old generation's collections). A command answered with an error (ioredis does not mark it)
 * stays until its deadline, when failing it again changes nothing (its promise is settled), and holds
 * the answered ones behind it that long.
 */
export function armCommandDeadlines(client: CommandSender, ms: number): void {
  const commands: Command[] = [];
  const deadlines: number[] = [];
  let head = 0;
  let timer: NodeJS.Timeout | undefined;

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
      commands.length = deadlines.length = head = 0;
      return;
    }
    // The settled front of the arrays goes once it is half of them: each entry is moved at most once.
    if (head > 1024 && head * 2 > commands.length) {
      commands.splice(0, head);
      deadlines.splice(0, head);
      head = 0;
    }
    arm();
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
}
