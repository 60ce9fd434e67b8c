import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../../../test/support/context.ts';
import { SaleBackoff, saleFaultOf, type SaleFaultKind, type SaleStage } from './sale-backoff.ts';
import { capturedLog } from '../../../test/support/logs.ts';

let ctx: TestContext;
beforeEach(() => {
  ctx = createTestContext();
});
afterEach(async () => {
  await ctx.close();
});

/** An error as ioredis reports a reply of Redis: name ReplyError, Redis's message. */
const reply = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });

/** Redis's real answer to reading a stream at a key that holds a string. */
async function wrongTypeError(): Promise<Error> {
  const key = `${ctx.config.REDIS_PREFIX}:{s1}:stream`;
  await ctx.redis.set(key, 'not a stream');
  return ctx.redis.xreadgroup('GROUP', 'order-writers', 'c', 'COUNT', 1, 'STREAMS', key, '>').then(
    () => {
      throw new Error('XREADGROUP on a string succeeded');
    },
    (error: Error) => error,
  );
}

function backoffWithLog() {
  const failures: [number, SaleStage, SaleFaultKind][] = [];
  const { logger, lines } = capturedLog();
  const backoff = new SaleBackoff(logger, (saleId, stage, kind) => failures.push([saleId, stage, kind]));
  return { backoff, lines, failures, messages: () => lines.map((l) => [l.msg, l.saleId, l.stage]) };
}

describe('which errors are about one sale', () => {
  it("a key of the wrong type is the sale's own; so is any other refusal Redis answers for its keys", async () => {
    expect(saleFaultOf(await wrongTypeError())).toBe('wrong_type');
    expect(saleFaultOf(reply('ERR Error running script: user_script:1: attempt to index a nil value'))).toBe('redis_error');
  });

  it('Redis unreachable, unable to serve now, or refusing the connection is not: the round fails as a whole', () => {
    expect(saleFaultOf(new Error('Command timed out'))).toBeUndefined();
    expect(saleFaultOf(new Error('Connection is closed.'))).toBeUndefined();
    for (const message of [
      'LOADING Redis is loading the dataset in memory',
      "OOM command not allowed when used memory > 'maxmemory'.",
      "READONLY You can't write against a read only replica.",
      'BUSY Redis is busy running a script.',
      'NOAUTH Authentication required.',
    ]) {
      expect(saleFaultOf(reply(message))).toBeUndefined();
    }
    expect(saleFaultOf('WRONGTYPE as a string')).toBeUndefined();
  });
});

describe('sales skipped for a fault of their own', () => {
  it('skips a failing sale for a wait doubling from 500 ms to 10 s, counting every failure and logging the problem once', async () => {
    const { backoff, failures, messages } = backoffWithLog();
    const error = await wrongTypeError();
    let now = 1_000_000;
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      expect(backoff.failed(7, 'read', error, now)).toBe(true);
      let wait = 0;
      while (!backoff.allows(7, now + wait)) wait += 100;
      waits.push(wait);
      now += wait;
    }
    expect(waits).toEqual([500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    expect(backoff.allows(8, now)).toBe(true);
    expect(backoff.count()).toBe(1);
    expect(failures).toEqual(Array.from({ length: 7 }, () => [7, 'read', 'wrong_type']));
    expect(messages()).toEqual([['sale skipped for now: its Redis keys refuse the worker', 7, 'read']]);
  });

  it('logs the same problem again after a minute, whichever step meets it, and a different one at once', async () => {
    const { backoff, messages } = backoffWithLog();
    const error = await wrongTypeError();
    backoff.failed(7, 'read', error, 0);
    backoff.failed(7, 'claim', error, 1_000);
    backoff.failed(7, 'read', error, 59_999);
    backoff.failed(7, 'read', error, 60_000);
    backoff.failed(
      7,
      'batch',
      reply('WRONGTYPE Operation against a key holding the wrong kind of value script: 0a1b, on @user_script:25.'),
      60_001,
    );
    expect(messages()).toEqual([
      ['sale skipped for now: its Redis keys refuse the worker', 7, 'read'],
      ['sale skipped for now: its Redis keys refuse the worker', 7, 'read'],
      ['sale skipped for now: its Redis keys refuse the worker', 7, 'batch'],
    ]);
  });

  it('takes a sale up again once every step that failed works, not when another one does', async () => {
    const { backoff, messages } = backoffWithLog();
    const error = await wrongTypeError();
    backoff.failed(7, 'batch', error, 0);
    backoff.succeeded(7, 'read');
    expect([backoff.count(), backoff.allows(7, 1)]).toEqual([1, false]);
    backoff.succeeded(7, 'batch');
    expect([backoff.count(), backoff.allows(7, 1)]).toEqual([0, true]);

    backoff.failed(8, 'read', error, 0);
    backoff.failed(8, 'claim', error, 0);
    backoff.succeeded(8, 'read');
    expect(backoff.count()).toBe(1);
    backoff.succeeded(8, 'claim');
    expect(backoff.count()).toBe(0);
    expect(messages()).toEqual([
      ['sale skipped for now: its Redis keys refuse the worker', 7, 'batch'],
      ['sale taken up again', 7, 'batch'],
      ['sale skipped for now: its Redis keys refuse the worker', 8, 'read'],
      ['sale taken up again', 8, 'claim'],
    ]);
  });

  it('does not skip a sale for an error that is not its own, and forgets sales no longer listed', async () => {
    const { backoff, failures } = backoffWithLog();
    expect(backoff.failed(7, 'read', new Error('Command timed out'), 0)).toBe(false);
    expect([backoff.count(), failures]).toEqual([0, []]);
    backoff.failed(7, 'read', await wrongTypeError(), 0);
    backoff.failed(9, 'claim', await wrongTypeError(), 0);
    backoff.keepOnly([9]);
    expect([backoff.count(), backoff.allows(7, 0), backoff.allows(9, 0)]).toEqual([1, true, false]);
  });
});
