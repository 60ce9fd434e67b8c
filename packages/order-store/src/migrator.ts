import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { createConnection } from 'mariadb';
import { poolConfigFromUrl } from './database-url.ts';

/** prisma/migrations of this repository. */
export const MIGRATIONS_DIR = new URL('../../../prisma/migrations/', import.meta.url);

// Prisma's own bookkeeping table, column for column, so `prisma migrate deploy` on a machine with the
// schema engine sees these migrations as applied.
const PRISMA_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             DATETIME(3),
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          DATETIME(3),
    started_at              DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    applied_steps_count     INTEGER UNSIGNED NOT NULL DEFAULT 0
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`;

export interface MigrationResult {
  database: string;
  applied: string[];
  alreadyApplied: string[];
}

/**
 * Applies prisma/migrations to the database of `databaseUrl`, creating the database if missing.
 * Idempotent, and safe to run from several processes at once (a named MySQL lock serializes them).
 * A migration that was applied but has since been edited is an error, as with Prisma.
 */
export async function migrate(databaseUrl: string, dir: URL = MIGRATIONS_DIR): Promise<MigrationResult> {
  const { database, ...server } = poolConfigFromUrl(databaseUrl);
  const connection = await createConnection({ ...server, multipleStatements: true });
  try {
    await connection.query(`CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    await connection.query(`USE \`${database}\``);
    const [lock] = await connection.query<{ got: number | bigint }[]>(`SELECT GET_LOCK(?, 60) AS got`, [`prisma_migrate_${database}`]);
    if (Number(lock?.got) !== 1) throw new Error(`could not take the migration lock of ${database} within 60 s`);
    try {
      await connection.query(PRISMA_MIGRATIONS_TABLE);
      const rows = await connection.query<{ migration_name: string; checksum: string }[]>(
        'SELECT migration_name, checksum FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
      );
      const done = new Map(rows.map((row) => [row.migration_name, row.checksum]));
      const result: MigrationResult = { database, applied: [], alreadyApplied: [] };
      for (const name of migrationNames(dir)) {
        const sql = readFileSync(new URL(`${name}/migration.sql`, dir), 'utf8');
        const checksum = createHash('sha256').update(sql).digest('hex');
        const recorded = done.get(name);
        if (recorded !== undefined) {
          if (recorded !== checksum) throw new Error(`migration ${name} was modified after it was applied`);
          result.alreadyApplied.push(name);
          continue;
        }
        const id = randomUUID();
        await connection.query(
          'INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, applied_steps_count) VALUES (?, ?, ?, NOW(3), 0)',
          [id, checksum, name],
        );
        await connection.query(sql);
        await connection.query('UPDATE _prisma_migrations SET finished_at = NOW(3), applied_steps_count = 1 WHERE id = ?', [id]);
        result.applied.push(name);
      }
      return result;
    } finally {
      await connection.query('SELECT RELEASE_LOCK(?)', [`prisma_migrate_${database}`]);
    }
  } finally {
    await connection.end();
  }
}

/**
 * Drops the database of `databaseUrl` if it exists: what a tool that made a database of its own with
 * `migrate` (the load test, the soak) removes when it is done.
 */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const { database, ...server } = poolConfigFromUrl(databaseUrl);
  const connection = await createConnection(server);
  try {
    await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
  } finally {
    await connection.end();
  }
}

/** Migration folders in the order Prisma applies them (their names start with a timestamp). */
export function migrationNames(dir: URL = MIGRATIONS_DIR): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(new URL(`${entry.name}/migration.sql`, dir)))
    .map((entry) => entry.name)
    .sort();
}
