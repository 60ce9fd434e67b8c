import { Redis } from 'ioredis';

/** Calls of every command a redis-server has served so far (INFO commandstats). */
export async function commandCounts(url: string): Promise<Map<string, number>> {
  const probe = new Redis(url);
  const text = await probe.info('commandstats');
  probe.disconnect();
  const counts = new Map<string, number>();
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts.set(match[1]!, Number(match[2]));
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
