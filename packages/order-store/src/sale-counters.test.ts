import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createConnection } from 'mariadb';
import { testDatabaseName } from '@flashsale/harness';
import { poolConfigFromUrl } from './database-url.ts';
import { dropDatabase, migrate, migrationNames, MIGRATIONS_DIR } from './migrator.ts';
import { createPrisma } from './prisma-client.ts';
import { saleOrderLedger } from './sale-counters.ts';

// The migration that added the counters fills them for the sales that exist, from their orders.

const url = Object.assign(new URL(process.env.DATABASE_URL!), { pathname: `/${testDatabaseName('counters')}` }).toString();
const scratch = mkdtempSync(join(tmpdir(), 'flashsale-migrations-'));
afterAll(async () => {
  await dropDatabase(url);
  rmSync(scratch, { recursive: true, force: true });
});

describe('the sale order counters migration', () => {
  it("fills every existing sale's counters from its orders, as a GROUP BY counts them", async () => {
    const counters = '20261126030000_sale_order_counters';
    for (const name of migrationNames().filter((n) => n < counters))
      cpSync(new URL(`${name}/`, MIGRATIONS_DIR), join(scratch, name), { recursive: true });
    await migrate(url, pathToFileURL(`${scratch}/`));
    const connection = await createConnection(poolConfigFromUrl(url));
    try {
      await connection.query(`INSERT INTO sales (name, stock, starts_at, ends_at, redis_generation) VALUES
        ('a', 100, NOW(3), NOW(3) + INTERVAL 1 HOUR, 'g'), ('b', 100, NOW(3), NOW(3) + INTERVAL 1 HOUR, 'g'), ('c', 100, NOW(3), NOW(3) + INTERVAL 1 HOUR, 'g')`);
      // Sales 1 and 2 get 40 orders of every status and quantity between them; sale 3 none.
      await connection.query(`INSERT INTO orders (reservation_id, sale_id, user_id, quantity, status, reserved_at, pay_by)
        SELECT CONCAT('r', seq), 1 + seq % 2, CONCAT('u', seq), 1 + seq % 3, ELT(1 + seq % 5, 'created', 'paid', 'cancelled', 'expired', 'paid'), NOW(3), NOW(3)
        FROM seq_1_to_40`);
    } finally {
      await connection.end();
    }

    await migrate(url);

    const prisma = createPrisma(url, 2);
    try {
      for (const saleId of [1, 2, 3]) {
        const byStatus = {
          created: { orders: 0, units: 0 },
          paid: { orders: 0, units: 0 },
          cancelled: { orders: 0, units: 0 },
          expired: { orders: 0, units: 0 },
        };
        for (const row of await prisma.order.groupBy({
          by: ['status'],
          where: { saleId },
          _count: { _all: true },
          _sum: { quantity: true },
        })) {
          byStatus[row.status] = { orders: row._count._all, units: row._sum.quantity ?? 0 };
        }
        expect((await saleOrderLedger(prisma, saleId)).byStatus, `sale ${saleId}`).toEqual(byStatus);
      }
      expect((await saleOrderLedger(prisma, 1)).byStatus.paid.orders).toBeGreaterThan(0);
    } finally {
      await prisma.$disconnect();
    }
  });
});
