import type { Redis } from 'ioredis';

/** The most commands one write carries; a turn that issues more sends a write per this many. */
export const MAX_COMMANDS_PER_WRITE = 16;

/**
 * Sends the commands a connection is given in one turn of the event loop in as few writes as it can.
 * The first command of a turn corks the connection's socket and schedules its uncork with setImmediate,
 * which runs once the turn's I/O callbacks are done; every MAX_COMMANDS_PER_WRITE commands leave at
 * once. The commands of the requests that arrived together (under a crowd, a gateway reads several
 * sockets a turn) then leave in one writev, which Redis reads with one read and answers with one write,
 * where each used to cost a write here and a read and a write there.
 *
 * Why the cap: a whole turn's commands held to its end leave Redis idle while the turn goes on, then
 * this process idle while Redis works through them; under a closed loop that convoy cost more in rate
 * than the writes saved (bench, 64 connections). A full batch leaving at once keeps both at work.
 *
 * Nothing waits for a later turn: the uncork comes before the loop polls again (libuv does not block
 * while an immediate is pending), so a lone command leaves as soon as it would have. Only the
 * connection's own socket is corked, and only while it is ready: a command ioredis queues offline or
 * writes into a pipeline's buffer is not touched. A socket that closes while corked loses what it held,
 * as it would lose what sat in the kernel's buffer: ioredis fails those commands, or sends them again
 * on the next connection (autoResendUnfulfilledCommands).
 */
export function coalesceWrites(client: Redis): void {
  let corked: Redis['stream'] | undefined;
  let batched = 0;
  const uncork = () => {
    const stream = corked;
    corked = undefined;
    batched = 0;
    stream?.uncork();
  };
  const send = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
  client.sendCommand = (...args: unknown[]) => {
    // A second argument is the stream of a pipeline (or a connection's set-up): not this socket's turn.
    if (args[1] !== undefined || client.status !== 'ready') return send(...args);
    if (corked === undefined) {
      corked = client.stream;
      corked.cork();
      setImmediate(uncork);
    } else if (batched === MAX_COMMANDS_PER_WRITE) {
      // A full batch leaves now, so Redis works on it while this turn goes on.
      corked.uncork();
      corked.cork();
      batched = 0;
    }
    batched += 1;
    return send(...args);
  };
}
