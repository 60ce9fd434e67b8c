import { afterAll, describe, expect, it } from 'vitest';
import { createPrisma } from './prisma-client.ts';
import { checkServerSettings } from './server-settings.ts';
import { capturedLog } from '../../../test/support/logs.ts';

const prisma = createPrisma(process.env.DATABASE_URL!, 1);
afterAll(async () => {
  await prisma.$disconnect();
});

describe('checkServerSettings', () => {
  it("logs the server's settings the order writer relies on, as this server has them", async () => {
    const [server] = await prisma.$queryRaw<
      { mode: string; autoinc: number | bigint }[]
    >`SELECT @@SESSION.sql_mode AS mode, @@innodb_autoinc_lock_mode AS autoinc`;
    const strict = /STRICT_(TRANS|ALL)_TABLES/.test(server!.mode);
    const autoinc = Number(server!.autoinc);
    const { logger, lines } = capturedLog();

    await checkServerSettings(prisma, logger);

    const expected = [
      ...(strict
        ? []
        : [
            {
              level: 50,
              sqlMode: server!.mode,
              msg: 'MySQL is not in strict mode: a value too long for its column would be truncated, not refused; add STRICT_TRANS_TABLES to sql_mode',
            },
          ]),
      ...(autoinc === 2
        ? []
        : [
            {
              level: 30,
              innodbAutoincLockMode: autoinc,
              msg: 'innodb_autoinc_lock_mode is not 2: order batches of different sales insert one at a time (2 recommended)',
            },
          ]),
    ];
    expect(
      lines.map(({ level, msg, sqlMode, innodbAutoincLockMode }) => ({
        level,
        msg,
        ...(sqlMode === undefined ? {} : { sqlMode }),
        ...(innodbAutoincLockMode === undefined ? {} : { innodbAutoincLockMode }),
      })),
    ).toEqual(expected);
  });

  it('rejects, logging nothing, when MySQL does not answer (the worker warms up without it)', async () => {
    const away = createPrisma('mysql://root@127.0.0.1:1/flashsale_none', 1);
    const { logger, lines } = capturedLog();

    await expect(checkServerSettings(away, logger)).rejects.toThrow();

    expect(lines).toEqual([]);
    await away.$disconnect();
  });
});
