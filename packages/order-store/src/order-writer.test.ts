import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection } from 'mariadb';
import { createTestContext, type TestContext } from '../../../test/support/context.ts';
import { poolConfigFromUrl } from './database-url.ts';
import { insertSale, type SaleRecord } from './sale-repository.ts';
import { isPermanentWriteError, writeOrderBatch } from './order-writer.ts';

// The writer against the real MariaDB, on reservations made here: it needs nothing of Redis.

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

async function newSale({ stock = 10, perUserLimit = 2 } = {}): Promise<SaleRecord> {
  return insertSale(ctx.prisma, {
    name: 'Order writer test',
    stock,
    perUserLimit,
    startsAt: new Date(Date.now() - 60_000),
    endsAt: new Date(Date.now() + 3_600_000),
  });
}

let entries = 0;
/** A reservation of the sale as the reserve script makes it, and its stream entry id (the writer gives back what it is passed). */
function reservation(
  sale: SaleRecord,
  userId: string,
  changes: { quantity?: number; generation?: string; reservationId?: string; reservedAt?: number } = {},
) {
  entries += 1;
  return {
    entryId: `${entries}-0`,
    reservationId: `${sale.id}-${randomUUID()}`,
    saleId: sale.id,
    userId,
    quantity: 1,
    reservedAt: 1_800_000_000_123,
    generation: sale.generation,
    ...changes,
  };
}

async function ordersOf(saleId: number) {
  const rows = await ctx.prisma.order.findMany({ where: { saleId }, orderBy: { id: 'asc' } });
  return rows.map((o) => ({
    reservationId: o.reservationId,
    userId: o.userId,
    quantity: o.quantity,
    status: o.status,
    reservedAt: o.reservedAt.getTime(),
  }));
}

async function soldUnits(saleId: number): Promise<number> {
  return (await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } })).soldUnits;
}

/** What the orders table should hold for these reservations. */
const rowsOf = (...written: ReturnType<typeof reservation>[]) =>
  written.map((r) => ({
    reservationId: r.reservationId,
    userId: r.userId,
    quantity: r.quantity,
    status: 'created',
    reservedAt: r.reservedAt,
  }));

describe('writeOrderBatch', () => {
  it('writes a batch of new buyers as one order each and raises sold_units by their units', async () => {
    const sale = await newSale({ stock: 10, perUserLimit: 3 });
    const batch = [reservation(sale, 'ann', { quantity: 3 }), reservation(sale, 'bob'), reservation(sale, 'cy', { quantity: 2 })];

    expect(await writeOrderBatch(ctx.prisma, sale.id, batch)).toEqual({ written: batch, replayed: [], rejected: [] });
    expect(await ordersOf(sale.id)).toEqual(rowsOf(...batch));
    expect(await soldUnits(sale.id)).toBe(6);
  });

  it('writes nothing for an empty batch', async () => {
    const sale = await newSale();

    expect(await writeOrderBatch(ctx.prisma, sale.id, [])).toEqual({ written: [], replayed: [], rejected: [] });
    expect(await soldUnits(sale.id)).toBe(0);
  });

  it('acknowledges a batch written before as replayed, writing nothing again, even when it sold the last units', async () => {
    const sale = await newSale({ stock: 2 });
    const batch = [reservation(sale, 'ann'), reservation(sale, 'bob')];
    await writeOrderBatch(ctx.prisma, sale.id, batch);

    // The worker died before XACK; the batch comes again, the sale now sold out.
    expect(await writeOrderBatch(ctx.prisma, sale.id, batch)).toEqual({ written: [], replayed: batch, rejected: [] });
    expect(await ordersOf(sale.id)).toEqual(rowsOf(...batch));
    expect(await soldUnits(sale.id)).toBe(2);
  });

  it('writes the new reservations of a batch whose first one was written before, that one acknowledged as replayed', async () => {
    const sale = await newSale();
    const batch = [reservation(sale, 'ann'), reservation(sale, 'bob'), reservation(sale, 'cy')];
    await writeOrderBatch(ctx.prisma, sale.id, batch.slice(0, 1));

    expect(await writeOrderBatch(ctx.prisma, sale.id, batch)).toEqual({
      written: batch.slice(1),
      replayed: batch.slice(0, 1),
      rejected: [],
    });
    expect(await ordersOf(sale.id)).toEqual(rowsOf(...batch));
    expect(await soldUnits(sale.id)).toBe(3);
  });

  it('writes a reservation that comes twice in one batch (a redelivery racing its original) once', async () => {
    const sale = await newSale();
    const original = reservation(sale, 'ann');
    const again = { ...original, entryId: '9999999999999-0' };

    expect(await writeOrderBatch(ctx.prisma, sale.id, [original, again])).toEqual({ written: [original], replayed: [again], rejected: [] });
    expect(await ordersOf(sale.id)).toEqual(rowsOf(original));
    expect(await soldUnits(sale.id)).toBe(1);
  });

  // Each refused entry beside one the writer must still write: the rest of a batch never pays for one bad entry.
  it.each<[string, string, (sale: SaleRecord) => Promise<ReturnType<typeof reservation>>]>([
    [
      'a buyer who already has an order under another reservation (Redis lost its buyers)',
      'DUPLICATE_BUYER',
      async (sale) => {
        await writeOrderBatch(ctx.prisma, sale.id, [reservation(sale, 'bad')]);
        return reservation(sale, 'bad');
      },
    ],
    ['the second reservation of one buyer in the same batch', 'DUPLICATE_BUYER', async (sale) => reservation(sale, 'good')],
    ['more units than the sale has left (Redis held more stock than MySQL)', 'OVER_STOCK', async (sale) => reservation(sale, 'bad')],
    ['more units than the per-user limit', 'OVER_USER_LIMIT', async (sale) => reservation(sale, 'bad', { quantity: 3 })],
    ['a quantity of 0', 'INVALID_QUANTITY', async (sale) => reservation(sale, 'bad', { quantity: 0 })],
    ['a negative quantity', 'INVALID_QUANTITY', async (sale) => reservation(sale, 'bad', { quantity: -1 })],
    ['a fractional quantity', 'INVALID_QUANTITY', async (sale) => reservation(sale, 'bad', { quantity: 1.5 })],
    ['an entry of a Redis state since rebuilt', 'STALE_GENERATION', async (sale) => reservation(sale, 'bad', { generation: randomUUID() })],
    // The quick pass's procedure takes any generation and any whole number: these fail its guard, not the call.
    [
      'a generation longer than any Redis state has',
      'STALE_GENERATION',
      async (sale) => reservation(sale, 'bad', { generation: `${sale.generation}-${'g'.repeat(300)}` }),
    ],
    ['a quantity far beyond any limit', 'OVER_USER_LIMIT', async (sale) => reservation(sale, 'bad', { quantity: Number.MAX_SAFE_INTEGER })],
  ])('refuses %s as %s, and writes the rest of the batch', async (_, reason, makeBad) => {
    // The good entry takes the last unit of the sale.
    const sale = await newSale({ stock: 4, perUserLimit: 2 });
    await writeOrderBatch(ctx.prisma, sale.id, [reservation(sale, 'earlier', { quantity: 2 })]);
    const bad = await makeBad(sale);
    if ((await soldUnits(sale.id)) === 2) await writeOrderBatch(ctx.prisma, sale.id, [reservation(sale, 'filler')]);
    const ordersBefore = await ordersOf(sale.id);
    const good = reservation(sale, 'good');

    expect(await writeOrderBatch(ctx.prisma, sale.id, [good, bad])).toEqual({
      written: [good],
      replayed: [],
      rejected: [{ reservation: bad, reason }],
    });
    expect(await ordersOf(sale.id)).toEqual([...ordersBefore, ...rowsOf(good)]);
    expect(await soldUnits(sale.id)).toBe(4);
  });

  it('refuses a whole batch of a generation longer than any Redis state has as STALE_GENERATION, not as an error', async () => {
    const sale = await newSale();
    const batch = [reservation(sale, 'ann'), reservation(sale, 'bob')].map((r) => ({
      ...r,
      generation: `${sale.generation}-${'g'.repeat(300)}`,
    }));

    expect(await writeOrderBatch(ctx.prisma, sale.id, batch)).toEqual({
      written: [],
      replayed: [],
      rejected: batch.map((r) => ({ reservation: r, reason: 'STALE_GENERATION' })),
    });
    expect(await soldUnits(sale.id)).toBe(0);
  });

  it('refuses every entry of a sale MySQL does not hold as SALE_NOT_FOUND', async () => {
    const gone = await newSale();
    await ctx.prisma.sale.delete({ where: { id: gone.id } });
    const batch = [reservation(gone, 'ann'), reservation(gone, 'bob')];

    expect(await writeOrderBatch(ctx.prisma, gone.id, batch)).toEqual({
      written: [],
      replayed: [],
      rejected: batch.map((r) => ({ reservation: r, reason: 'SALE_NOT_FOUND' })),
    });
  });

  it('judges a redelivered entry as replayed before anything else, even once its generation is stale', async () => {
    const sale = await newSale();
    const written = reservation(sale, 'ann');
    await writeOrderBatch(ctx.prisma, sale.id, [written]);
    await ctx.prisma.sale.update({ where: { id: sale.id }, data: { redisGeneration: randomUUID() } });

    expect(await writeOrderBatch(ctx.prisma, sale.id, [written])).toEqual({ written: [], replayed: [written], rejected: [] });
  });

  it('stores the instant Redis accepted each reservation to the millisecond, at the edges of the range too', async () => {
    const sale = await newSale();
    // The last two are where arithmetic in floating point would be off by microseconds.
    const instants = [Date.UTC(1970, 0, 1, 0, 0, 0, 1), Date.UTC(5000, 5, 1, 0, 0, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999)];
    const batch = instants.map((reservedAt, i) => reservation(sale, `buyer-${i}`, { reservedAt }));

    await writeOrderBatch(ctx.prisma, sale.id, batch);

    expect((await ordersOf(sale.id)).map((o) => o.reservedAt)).toEqual(instants);
  });

  it('stores buyer ids byte for byte: Alice, alice and "alice " are three buyers, quotes, backslashes and control characters kept', async () => {
    const sale = await newSale({ stock: 10, perUserLimit: 1 });
    const batch = ['Alice', 'alice', 'alice ', 'say "hi" \\o/', 'tab\tnew\nline\u0000', '\u{1F600}'.repeat(64)].map((buyer) =>
      reservation(sale, buyer),
    );

    expect(await writeOrderBatch(ctx.prisma, sale.id, batch)).toEqual({ written: batch, replayed: [], rejected: [] });
    expect(await ordersOf(sale.id)).toEqual(rowsOf(...batch));
  });

  it("writes nothing of a batch MySQL refuses for one entry's data, and fails with an error the worker does not retry", async () => {
    const sale = await newSale();
    const batch = [reservation(sale, 'ann'), reservation(sale, 'x'.repeat(65))];

    const failure: unknown = await writeOrderBatch(ctx.prisma, sale.id, batch).catch((error: unknown) => error);

    expect(isPermanentWriteError(failure)).toBe(true);
    expect(await ordersOf(sale.id)).toEqual([]);
    expect(await soldUnits(sale.id)).toBe(0);
  });
});

/**
 * An error as Prisma's MariaDB adapter reports a statement the server refused (seen here for every
 * server error below): P2010, the server's number and text in the adapter's cause and in the message.
 */
function rawQueryFailed(code: string, text: string): Error {
  return Object.assign(
    new Error(`\nInvalid \`prisma.$executeRawUnsafe()\` invocation:\n\n\nRaw query failed. Code: \`${code}\`. Message: \`${text}\``),
    {
      code: 'P2010',
      meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { originalCode: code, originalMessage: text } } },
    },
  );
}

// What the servers say, word for word: the MariaDB 10.11 texts were produced on the test server (the
// writer's own statements, or the column's neighbours), the MySQL 8.0 ones are from its error reference.
const SERVER_ERRORS: { source: string; code: string; text: string; permanent: boolean }[] = [
  { source: 'MariaDB', code: '1406', text: "Data too long for column 'user_id' at row 1", permanent: true },
  { source: 'MariaDB', code: '1265', text: "Data truncated for column 'quantity' at row 1", permanent: true },
  { source: 'MariaDB', code: '1264', text: "Out of range value for column 'quantity' at row 1", permanent: true },
  {
    source: 'MariaDB',
    code: '1366',
    text: "Incorrect integer value: 'abc' for column `flashsale_test`.`orders`.`quantity` at row 1",
    permanent: true,
  },
  {
    source: 'MariaDB',
    code: '1292',
    text: "Incorrect datetime value: '10000-01-01' for column `flashsale_test`.`orders`.`reserved_at` at row 1",
    permanent: true,
  },
  { source: 'MariaDB', code: '1048', text: "Column 'user_id' cannot be null", permanent: true },
  {
    source: 'MariaDB',
    code: '1452',
    text: 'Cannot add or update a child row: a foreign key constraint fails (`flashsale_test`.`orders`, CONSTRAINT `orders_sale_id_fkey` FOREIGN KEY (`sale_id`) REFERENCES `sales` (`id`) ON UPDATE CASCADE)',
    permanent: true,
  },
  { source: 'MariaDB', code: '4025', text: 'CONSTRAINT `orders_quantity_positive` failed for `flashsale_test`.`orders`', permanent: true },
  {
    source: 'MariaDB',
    code: '4025',
    text: 'CONSTRAINT `sales_sold_units_within_stock` failed for `flashsale_test`.`sales`',
    permanent: true,
  },
  { source: 'MySQL 8.0', code: '3819', text: "Check constraint 'orders_quantity_positive' is violated.", permanent: true },
  { source: 'MySQL 8.0', code: '1366', text: "Incorrect integer value: 'abc' for column 'quantity' at row 1", permanent: true },
  { source: 'MySQL 8.0', code: '1292', text: "Incorrect datetime value: '10000-01-01' for column 'reserved_at' at row 1", permanent: true },
  { source: 'MariaDB', code: '1205', text: 'Lock wait timeout exceeded; try restarting transaction', permanent: false },
  { source: 'MariaDB', code: '1213', text: 'Deadlock found when trying to get lock; try restarting transaction', permanent: false },
  { source: 'MariaDB', code: '1969', text: 'Query execution was interrupted (max_statement_time exceeded)', permanent: false },
  {
    source: 'MySQL 8.0',
    code: '3024',
    text: 'Query execution was interrupted, maximum statement execution time exceeded',
    permanent: false,
  },
  // A duplicate key the writer's lookups explain is theirs to judge; one they cannot is UnexplainedConflict.
  { source: 'MariaDB', code: '1062', text: "Duplicate entry 'r-dup' for key 'orders_reservation_id_key'", permanent: false },
  { source: 'mariadb driver', code: '45009', text: 'socket has unexpectedly been closed', permanent: false },
  {
    source: 'mariadb driver',
    code: '45028',
    text: 'pool timeout: failed to retrieve a connection from pool after 2000ms\n    (pool connections: active=0 idle=0 limit=1)',
    permanent: false,
  },
];

describe('isPermanentWriteError', () => {
  it.each(SERVER_ERRORS)('$source $code $text, as Prisma reports it: permanent $permanent', ({ code, text, permanent }) => {
    expect(isPermanentWriteError(rawQueryFailed(code, text))).toBe(permanent);
  });

  // Each of the two is enough alone: the number, whatever language the server speaks (lc_messages), and
  // the text, whichever client reported it and where.
  it.each(SERVER_ERRORS)(
    '$source $code, by its number alone (a message in another language): permanent $permanent',
    ({ code, permanent }) => {
      expect(isPermanentWriteError(rawQueryFailed(code, '(in the language of the server)'))).toBe(permanent);
    },
  );

  it.each(SERVER_ERRORS)('$source $code $text, by its text alone: permanent $permanent', ({ text, permanent }) => {
    expect(isPermanentWriteError(new Error(text))).toBe(permanent);
  });

  it.each<[string, boolean, unknown]>([
    [
      'an interactive transaction that outlived its timeout (Prisma P2028, seen here)',
      false,
      Object.assign(
        new Error(
          'Transaction API error: A query cannot be executed on an expired transaction. The timeout for this transaction was 100 ms, however 302 ms passed since the start of the transaction.',
        ),
        { code: 'P2028' },
      ),
    ],
    [
      'a timeout fetching a connection from the pool (Prisma P2024)',
      false,
      Object.assign(new Error('Timed out fetching a new connection from the connection pool.'), { code: 'P2024' }),
    ],
    [
      'a value too long for its column (Prisma P2000)',
      true,
      Object.assign(new Error("The provided value for the column is too long for the column's type. Column: user_id"), { code: 'P2000' }),
    ],
    [
      'a foreign key refusal (Prisma P2003)',
      true,
      Object.assign(new Error('Foreign key constraint violated on the foreign key'), { code: 'P2003' }),
    ],
    ['a string thrown instead of an error', false, 'Data too long'],
  ])('%s: permanent %s', (_, permanent, error) => {
    expect(isPermanentWriteError(error)).toBe(permanent);
  });
});

describe('isPermanentWriteError, on what MariaDB answers', () => {
  // One row, its pay_by (which no case is about) a valid time.
  const insert = (values: string, ...params: unknown[]) =>
    ctx.prisma.$executeRawUnsafe(
      `INSERT INTO orders (reservation_id, sale_id, user_id, quantity, status, reserved_at, pay_by) VALUES ${values.replace(/\)$/, ', NOW(3))')}`,
      ...params,
    );
  const refusalOf = async (statement: () => Promise<unknown>) => {
    const error = (await statement().then(
      () => expect.unreachable('MariaDB took the statement'),
      (failure: unknown) => failure,
    )) as { meta: { driverAdapterError: { cause: { originalCode: string; originalMessage: string } } } };
    const { originalCode, originalMessage } = error.meta.driverAdapterError.cause;
    const database = poolConfigFromUrl(ctx.config.DATABASE_URL).database;
    return { error, code: originalCode, text: originalMessage.replaceAll(`\`${database}\``, '`flashsale_test`') };
  };

  let sale: SaleRecord;
  beforeAll(async () => {
    sale = await newSale();
  });

  // Each statement is one the writer could send with a bad entry (or the neighbour of one), refused.
  it.each<[string, string, () => Promise<unknown>]>([
    [
      'a buyer id longer than the column',
      "Data too long for column 'user_id' at row 1",
      () => insert("(?, ?, ?, 1, 'created', NOW(3))", randomUUID(), sale.id, 'x'.repeat(65)),
    ],
    [
      'a quantity with trailing characters',
      "Data truncated for column 'quantity' at row 1",
      () => insert("(?, ?, 'u', ?, 'created', NOW(3))", randomUUID(), sale.id, '1.5x'),
    ],
    [
      "a quantity out of the column's range",
      "Out of range value for column 'quantity' at row 1",
      () => insert("(?, ?, 'u', ?, 'created', NOW(3))", randomUUID(), sale.id, '99999999999'),
    ],
    [
      'a quantity that is not a number',
      "Incorrect integer value: 'abc' for column `flashsale_test`.`orders`.`quantity` at row 1",
      () => insert("(?, ?, 'u', ?, 'created', NOW(3))", randomUUID(), sale.id, 'abc'),
    ],
    [
      "a time past DATETIME's range",
      "Incorrect datetime value: '10000-01-01' for column `flashsale_test`.`orders`.`reserved_at` at row 1",
      () => insert("(?, ?, 'u', 1, 'created', ?)", randomUUID(), sale.id, '10000-01-01'),
    ],
    ['no buyer id', "Column 'user_id' cannot be null", () => insert("(?, ?, NULL, 1, 'created', NOW(3))", randomUUID(), sale.id)],
    [
      'a sale that does not exist',
      SERVER_ERRORS.find(({ code }) => code === '1452')!.text,
      () => insert("(?, 2000000000, 'u', 1, 'created', NOW(3))", randomUUID()),
    ],
    [
      'a quantity of 0 (CHECK)',
      'CONSTRAINT `orders_quantity_positive` failed for `flashsale_test`.`orders`',
      () => insert("(?, ?, 'u', 0, 'created', NOW(3))", randomUUID(), sale.id),
    ],
    [
      'more units sold than the stock (CHECK)',
      'CONSTRAINT `sales_sold_units_within_stock` failed for `flashsale_test`.`sales`',
      () => ctx.prisma.$executeRawUnsafe('UPDATE sales SET sold_units = stock + 1 WHERE id = ?', sale.id),
    ],
  ])('%s: MariaDB says %j, a permanent error', async (_, expected, statement) => {
    const { error, code, text } = await refusalOf(statement);

    expect(text).toBe(expected);
    expect(SERVER_ERRORS).toContainEqual({ source: 'MariaDB', code, text, permanent: true });
    expect(isPermanentWriteError(error)).toBe(true);
  });

  it('a statement over its time limit: MariaDB says so, and it is retried', async () => {
    const { error, code, text } = await refusalOf(() =>
      ctx.prisma.$queryRawUnsafe('SET STATEMENT max_statement_time = 0.05 FOR SELECT SLEEP(2)'),
    );

    expect(SERVER_ERRORS).toContainEqual({ source: 'MariaDB', code, text, permanent: false });
    expect(isPermanentWriteError(error)).toBe(false);
  });

  it('a row another transaction holds: MariaDB says the lock wait timed out, and it is retried', async () => {
    const holder = await createConnection(poolConfigFromUrl(ctx.config.DATABASE_URL));
    try {
      await holder.beginTransaction();
      await holder.query('SELECT id FROM sales WHERE id = ? FOR UPDATE', [sale.id]);
      // NOWAIT: the lock wait's error at once, not after innodb_lock_wait_timeout.
      const { error, code, text } = await refusalOf(() =>
        ctx.prisma.$queryRawUnsafe('SELECT id FROM sales WHERE id = ? FOR UPDATE NOWAIT', sale.id),
      );

      expect(SERVER_ERRORS).toContainEqual({ source: 'MariaDB', code, text, permanent: false });
      expect(isPermanentWriteError(error)).toBe(false);
    } finally {
      await holder.rollback();
      await holder.end();
    }
  });
});
