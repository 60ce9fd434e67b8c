import { describe, expect, it } from 'vitest';
import { connectionCeiling, ownOpenFileLimit, softOpenFileLimit } from './connection-ceiling.ts';

const limitsWith = (soft: string, hard: string) =>
  [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max processes             63704                63704                processes ',
    `Max open files            ${soft.padEnd(21)}${hard.padEnd(21)}files     `,
    'Max locked memory         8388608              8388608              bytes     ',
  ].join('\n');

describe('the connection ceiling derived from the open-file limit', () => {
  it('reads the soft limit of "Max open files", not the hard one', () => {
    expect(softOpenFileLimit(limitsWith('1024', '524288'))).toBe(1024);
  });

  it('reads "unlimited" as the kernel default ceiling of 1048576', () => {
    expect(softOpenFileLimit(limitsWith('unlimited', 'unlimited'))).toBe(1_048_576);
  });

  it('reads nothing from a text without the line', () => {
    expect(softOpenFileLimit('Limit Soft Limit Hard Limit Units\n')).toBeUndefined();
  });

  it("reads this process's own limit from /proc/self/limits", () => {
    expect(ownOpenFileLimit()).toEqual({ limit: expect.any(Number), read: true });
  });

  it('keeps 10% and 128 descriptors of the limit for the process itself, and never goes below 64', () => {
    expect(connectionCeiling(20_000)).toBe(17_872);
    expect(connectionCeiling(1024)).toBe(793);
    expect(connectionCeiling(256)).toBe(102);
    expect(connectionCeiling(100)).toBe(64);
  });
});
