import { Redis } from 'ioredis';

/** Calls of every command a redis-server has served so far (INFO commandstats). */
export async function commandCounts(url: string): Promise<Map<string, number>> {
  const probe = new Redis(url);
  const text = await probe.info('commandstats');
  probe.disconnect();
  return countsIn(text);
}

function countsIn(commandstats: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const match of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts.set(match[1]!, Number(match[2]));
  return counts;
}

/** The commands called between two counts, but the probe's own INFO and the connection handshakes. */
export function commandsBetween(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const changed: Record<string, number> = {};
  for (const [name, calls] of after) {
    const diff = calls - (before.get(name) ?? 0);
    if (diff > 0 && !['info', 'client|setinfo', 'hello', 'client|setname', 'select', 'ping'].includes(name)) changed[name] = diff;
  }
  return changed;
}

/** What a redis-server did for a piece of work, by its own accounting. */
export interface RedisWork {
  /** Bytes it sent its clients (INFO stats total_net_output_bytes). */
  bytesSent: number;
  /** Calls of each command, those that scripts ran included (INFO commandstats). */
  commands: Record<string, number>;
  /** All the calls. */
  calls: number;
}

/**
 * Measures what a redis-server does while `work` runs, read before and after on one connection opened
 * beforehand. Redis takes its byte count before it sends the reply carrying it, so the first reading's
 * reply (a RESP bulk string) is counted in the difference: it is taken off.
 */
export async function redisWorkOf(url: string, work: () => Promise<unknown>): Promise<RedisWork> {
  const probe = new Redis(url);
  try {
    const read = async () => {
      const text = await probe.info('stats', 'commandstats');
      const length = Buffer.byteLength(text);
      return {
        counts: countsIn(text),
        bytes: Number(/^total_net_output_bytes:(\d+)/m.exec(text)?.[1]),
        replyBytes: `$${length}\r\n`.length + length + 2,
      };
    };
    const before = await read();
    await work();
    const after = await read();
    const commands = commandsBetween(before.counts, after.counts);
    return {
      bytesSent: after.bytes - before.bytes - before.replyBytes,
      commands,
      calls: Object.values(commands).reduce((a, b) => a + b, 0),
    };
  } finally {
    probe.disconnect();
  }
}
