import { describe, expect, it } from 'vitest';
import { DeadlineExceeded, DrainTimeout, Failure, FAILURES, SaleLockBusy, SaleNotFound, withDeadline } from './failures.ts';

describe('failures', () => {
  it.each([
    [SaleLockBusy, 'SALE_LOCK_BUSY', 'SaleLockBusy'],
    [DrainTimeout, 'DRAIN_TIMEOUT', 'DrainTimeout'],
    [SaleNotFound, 'SALE_NOT_FOUND', 'SaleNotFound'],
    [DeadlineExceeded, 'DEADLINE_EXCEEDED', 'DeadlineExceeded'],
  ] as const)('%s carries its stable code, its name and the catalogue message unless given a detail', (Kind, code, name) => {
    const plain = new Kind();
    const detailed = new Kind('sale 7: something precise');

    expect(plain).toBeInstanceOf(Failure);
    expect(plain).toBeInstanceOf(Error);
    expect(plain.code).toBe(code);
    expect(Kind.name).toBe(name);
    expect(plain.name).toBe(name);
    expect(String(plain)).toBe(`${name}: ${FAILURES[code]}`);
    expect(plain.message).toBe(FAILURES[code]);
    expect(detailed.message).toBe('sale 7: something precise');
    expect(detailed.code).toBe(code);
  });

  it('has a class for every code of the catalogue', () => {
    const codes = [SaleLockBusy, DrainTimeout, SaleNotFound, DeadlineExceeded].map((Kind) => new Kind().code);

    expect(codes.sort()).toEqual(Object.keys(FAILURES).sort());
  });

  it('withDeadline settles as the call does when it answers in time, and fails with DeadlineExceeded naming it when it does not', async () => {
    await expect(withDeadline(Promise.resolve(7), 1000, 'the queue')).resolves.toBe(7);
    await expect(withDeadline(Promise.reject(new Error('refused')), 1000, 'the queue')).rejects.toThrow('refused');
    const never = new Promise<never>(() => undefined);
    const late = withDeadline(never, 20, 'the queue');
    await expect(late).rejects.toBeInstanceOf(DeadlineExceeded);
    await expect(late).rejects.toThrow('the queue did not answer within 20 ms');
  });
});
