import { createHash, randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import internals from '@prisma/internals';
import { poolConfigFromUrl } from './database-url.ts';
import { migrate, migrationNames, MIGRATIONS_DIR, type MigrationResult } from './migrator.ts';

const { getDMMF } = internals;
const DATABASE_URL = process.env.DATABASE_URL!;
const SCHEMA = new URL('../../../prisma/schema.prisma', import.meta.url);

type DmmfModel = Awaited<ReturnType<typeof getDMMF>>['datamodel']['models'][number];

/** A table as the Prisma schema declares it: its columns, which are NOT NULL, and its unique keys. */
interface TableShape {
  columns: string[];
  notNull: string[];
  uniqueKeys: string[][];
}

function declaredShape(model: DmmfModel): TableShape {
  const columnFields = model.fields.filter((field) => field.kind === 'scalar' || field.kind === 'enum');
  const column = (name: string) => {
    const field = columnFields.find((f) => f.name === name);
    if (!field) throw new Error(`${model.name}.${name} is not a column`);
    return field.dbName ?? field.name;
  };
  const primaryKey = model.primaryKey ? model.primaryKey.fields : columnFields.filter((f) => f.isId).map((f) => f.name);
  const uniqueKeys = [
    primaryKey,
    ...columnFields.filter((f) => f.isUnique).map((f) => [f.name]),
    ...model.uniqueIndexes.map((index) => [...index.fields]),
  ].map((fields) => fields.map(column));
  return {
    columns: columnFields.map((f) => f.dbName ?? f.name).sort(),
    notNull: columnFields
      .filter((f) => f.isRequired)
      .map((f) => f.dbName ?? f.name)
      .sort(),
    uniqueKeys: sortKeys(uniqueKeys),
  };
}

function sortKeys(keys: string[][]): string[][] {
  return keys.map((key) => [...key]).sort((a, b) => a.join(',').localeCompare(b.join(',')));
}

let connection: Connection;
let database: string;
let models: DmmfModel[];

beforeAll(async () => {
  const { database: name, ...server } = poolConfigFromUrl(DATABASE_URL);
  database = name;
  connection = await createConnection(server);
  models = [...(await getDMMF({ datamodel: readFileSync(SCHEMA, 'utf8') })).datamodel.models];
});
afterAll(async () => {
  await connection.end();
});

async function actualShape(table: string): Promise<TableShape> {
  const columns = await connection.query<{ name: string; nullable: string }[]>(
    'SELECT COLUMN_NAME AS name, IS_NULLABLE AS nullable FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
    [database, table],
  );
  const indexColumns = await connection.query<{ name: string; column: string }[]>(
    `SELECT INDEX_NAME AS name, COLUMN_NAME AS \`column\` FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0 ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
    [database, table],
  );
  const keys = new Map<string, string[]>();
  for (const { name, column } of indexColumns) keys.set(name, [...(keys.get(name) ?? []), column]);
  return {
    columns: columns.map((c) => c.name).sort(),
    notNull: columns
      .filter((c) => c.nullable === 'NO')
      .map((c) => c.name)
      .sort(),
    uniqueKeys: sortKeys([...keys.values()]),
  };
}

describe('the migrated database against prisma/schema.prisma', () => {
  it('reads the models the contract names from the schema', () => {
    expect(models.map((model) => model.dbName ?? model.name).sort()).toEqual([
      'lost_reservations',
      'orders',
      'payment_events',
      'sale_paid_counts',
      'sales',
      'stock_returns',
    ]);
  });

  it('has exactly the tables the schema declares, besides the migrations table', async () => {
    const tables = await connection.query<{ name: string }[]>(
      'SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?',
      [database],
    );

    expect(tables.map((t) => t.name).sort()).toEqual(['_prisma_migrations', ...models.map((model) => model.dbName ?? model.name)].sort());
  });

  it('has every column of every model, NOT NULL exactly where the field is required, and every unique key', async () => {
    for (const model of models) {
      const table = model.dbName ?? model.name;
      expect({ table, ...(await actualShape(table)) }).toEqual({ table, ...declaredShape(model) });
    }
  });

  it('has a foreign key for every relation the schema declares', async () => {
    const declared = models.flatMap((model) =>
      model.fields
        .filter((field) => field.kind === 'object' && (field.relationFromFields?.length ?? 0) > 0)
        .map((field) => {
          const target = models.find((m) => m.name === field.type)!;
          const columnOf = (m: DmmfModel, name: string) => {
            const f = m.fields.find((candidate) => candidate.name === name)!;
            return f.dbName ?? f.name;
          };
          return {
            table: model.dbName ?? model.name,
            columns: field.relationFromFields!.map((name) => columnOf(model, name)).join(','),
            referencedTable: target.dbName ?? target.name,
            referencedColumns: field.relationToFields!.map((name) => columnOf(target, name)).join(','),
          };
        }),
    );
    const actual = await connection.query<{ table: string; columns: string; referencedTable: string; referencedColumns: string }[]>(
      `SELECT TABLE_NAME AS \`table\`, GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION) AS columns,
              REFERENCED_TABLE_NAME AS referencedTable, GROUP_CONCAT(REFERENCED_COLUMN_NAME ORDER BY ORDINAL_POSITION) AS referencedColumns
       FROM information_schema.KEY_COLUMN_USAGE
       WHERE TABLE_SCHEMA = ? AND REFERENCED_TABLE_NAME IS NOT NULL
       GROUP BY TABLE_NAME, CONSTRAINT_NAME, REFERENCED_TABLE_NAME`,
      [database],
    );

    expect(declared).toEqual([
      { table: 'orders', columns: 'sale_id', referencedTable: 'sales', referencedColumns: 'id' },
      { table: 'stock_returns', columns: 'sale_id', referencedTable: 'sales', referencedColumns: 'id' },
    ]);
    expect(actual.map((row) => ({ ...row }))).toEqual(declared);
  });

  it('holds the unique keys the contract relies on: one order per reservation, one live order per buyer and sale', async () => {
    expect((await actualShape('orders')).uniqueKeys).toEqual([['id'], ['reservation_id'], ['sale_id', 'live_user_id']]);
    // One create per Idempotency-Key, even from two gateways at once.
    expect((await actualShape('sales')).uniqueKeys).toEqual([['id'], ['idempotency_key']]);
  });
});

describe('migrate', () => {
  // Named as the harness names a run's databases (testDatabaseName), so the run's teardown finds it if left.
  const fresh = `flashsale_migtest_${process.env.FLASHSALE_TEST_RUN ?? 'adhoc'}_${randomBytes(4).toString('hex')}`;
  const freshUrl = Object.assign(new URL(DATABASE_URL), { pathname: `/${fresh}` }).toString();
  const MIGRATIONS = [
    '20261122000000_init',
    '20261122220000_reconciler',
    '20261122233000_exact_buyer_ids',
    '20261123000000_checkpoint_stream_id',
    '20261123120000_sale_publication',
    '20261123200000_order_lifecycle',
    '20261123210000_sale_controls',
    '20261125220000_sale_admission',
    '20261126010000_lost_reservations',
    '20261126020000_rebuy_rule',
    '20261126030000_sale_order_counters',
    '20261126040000_checkpoint_replication_id',
    '20261126090000_order_batch_procedures',
    '20261129040000_door_guards',
  ];
  let first: MigrationResult;
  let second: MigrationResult;
  let scratch: string | undefined;

  beforeAll(async () => {
    first = await migrate(freshUrl);
    second = await migrate(freshUrl);
  });
  afterAll(async () => {
    await connection.query(`DROP DATABASE IF EXISTS \`${fresh}\``);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('creates a missing database and applies every migration to it', () => {
    expect(migrationNames()).toEqual(MIGRATIONS);
    expect(first).toEqual({ database: fresh, applied: MIGRATIONS, alreadyApplied: [] });
  });

  it('applies nothing on a second run', () => {
    expect(second).toEqual({ database: fresh, applied: [], alreadyApplied: MIGRATIONS });
  });

  it('records each migration once in _prisma_migrations with the sha256 of its migration.sql, as Prisma does', async () => {
    const rows = await connection.query<
      { migration_name: string; checksum: string; finished: number | bigint; rolled_back: number | bigint; applied_steps_count: number }[]
    >(
      `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS rolled_back, applied_steps_count
       FROM \`${fresh}\`._prisma_migrations ORDER BY migration_name`,
    );

    expect(rows.map((row) => ({ ...row, finished: Number(row.finished), rolled_back: Number(row.rolled_back) }))).toEqual(
      migrationNames().map((name) => ({
        migration_name: name,
        checksum: createHash('sha256')
          .update(readFileSync(new URL(`${name}/migration.sql`, MIGRATIONS_DIR)))
          .digest('hex'),
        finished: 1,
        rolled_back: 0,
        applied_steps_count: 1,
      })),
    );
  });

  it('refuses to run when an applied migration was edited since', async () => {
    scratch = mkdtempSync(join(tmpdir(), 'flashsale-migrations-'));
    cpSync(MIGRATIONS_DIR, scratch, { recursive: true });
    appendFileSync(join(scratch, '20261122000000_init', 'migration.sql'), '\n-- edited after it was applied\n');

    await expect(migrate(freshUrl, pathToFileURL(`${scratch}/`))).rejects.toThrow(
      'migration 20261122000000_init was modified after it was applied',
    );
  });
});
