import { readFileSync } from 'node:fs';
import type { Connection } from 'mariadb';

/** The InnoDB and binlog settings a pipeline run had, as the run's record states them. */
export async function innodbSettingsOf(db: Connection): Promise<Record<string, string>> {
  const names = [
    'innodb_flush_log_at_trx_commit',
    'innodb_buffer_pool_size',
    'innodb_log_file_size',
    'innodb_log_buffer_size',
    'innodb_doublewrite',
    'innodb_flush_method',
    'log_bin',
    'sync_binlog',
    'version',
  ];
  const [row] = await db.query<Record<string, unknown>[]>(`SELECT ${names.map((name) => `@@${name} AS ${name}`).join(', ')}`);
  return Object.fromEntries(names.map((name) => [name, String(row?.[name])]));
}

/** One Redis command's share of a run: calls and the server's time in it (INFO commandstats' usec), per order. */
export interface CommandCost {
  command: string;
  callsPerOrder: number;
  usPerOrder: number;
}

/** The commands that ran between two INFO commandstats, most time first, per order. */
export function redisCommandCosts(before: string, after: string, orders: number): CommandCost[] {
  const read = (info: string) =>
    new Map(
      [...info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)].map((m) => [m[1]!, { calls: Number(m[2]), usec: Number(m[3]) }]),
    );
  const was = read(before);
  return [...read(after)]
    .map(([command, now]) => ({
      command,
      callsPerOrder: Number(((now.calls - (was.get(command)?.calls ?? 0)) / orders).toFixed(3)),
      usPerOrder: Number(((now.usec - (was.get(command)?.usec ?? 0)) / orders).toFixed(2)),
    }))
    .filter((cost) => cost.callsPerOrder > 0)
    .sort((a, b) => b.usPerOrder - a.usPerOrder);
}

/** A counter of SHOW GLOBAL STATUS (Innodb_os_log_written, Binlog_bytes_written), 0 when the server has none. */
export async function statusCounter(db: Connection, name: string): Promise<number> {
  const rows = await db.query<{ Value: string }[]>('SHOW GLOBAL STATUS LIKE ?', [name]);
  return Number(rows[0]?.Value ?? 0);
}

/** The pid of the mariadbd behind `db` (its pid file): whose /proc CPU a bench reads. */
export async function mariadbPidOf(db: Connection): Promise<number> {
  const [row] = await db.query<{ file: string }[]>('SELECT @@pid_file AS file');
  return Number(readFileSync(row!.file, 'utf8').trim());
}
