import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/support/context.ts';
import { insertSale } from './sale-repository.ts';
import { isDeadlock, isMysqlUnavailable } from './mysql-unavailable.ts';

// How a failed statement is told apart, on the errors the real MariaDB gives through Prisma.

let ctx: TestContext;
beforeAll(() => {
  ctx = createTestContext();
});
afterAll(async () => {
  await ctx.close();
});

const newSale = () =>
  insertSale(ctx.prisma, {
    name: 'error kinds',
    stock: 10,
    perUserLimit: 1,
    startsAt: new Date(Date.now() - 60_000),
    endsAt: new Date(Date.now() + 3_600_000),
  });

describe('the kinds of MySQL failure', () => {
  it('a deadlock: the victim is told a deadlock (run it again) and MySQL unavailable (a 503); the other commits', async () => {
    const [a, b] = [await newSale(), await newSale()];
    // Each transaction locks one sale row, waits until the other holds its own, then asks for the other's.
    let held = 0;
    const bothHold = async () => {
      held += 1;
      while (held < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const lockBoth = (first: number, second: number) =>
      ctx.prisma.$transaction(
        async (tx) => {
          await tx.$executeRaw`UPDATE sales SET name = 'locked' WHERE id = ${first}`;
          await bothHold();
          await tx.$executeRaw`UPDATE sales SET name = 'locked' WHERE id = ${second}`;
        },
        { maxWait: 10_000, timeout: 30_000 },
      );
    const outcomes = await Promise.allSettled([lockBoth(a.id, b.id), lockBoth(b.id, a.id)]);

    const failed = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect({ deadlock: isDeadlock(failed[0]!.reason), unavailable: isMysqlUnavailable(failed[0]!.reason) }).toEqual({
      deadlock: true,
      unavailable: true,
    });
  });

  it('a refused row is neither: a duplicate key is the data, and running it again gives the same', async () => {
    const sale = await newSale();
    const duplicate = await ctx.prisma
      .$executeRaw`INSERT INTO sales (id, name, stock, per_user_limit, starts_at, ends_at, redis_generation) SELECT id, name, stock, per_user_limit, starts_at, ends_at, redis_generation FROM sales WHERE id = ${sale.id}`.then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(duplicate).toBeDefined();
    expect({ deadlock: isDeadlock(duplicate), unavailable: isMysqlUnavailable(duplicate) }).toEqual({
      deadlock: false,
      unavailable: false,
    });
  });
});
