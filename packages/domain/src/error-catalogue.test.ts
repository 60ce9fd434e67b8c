import { describe, expect, it } from 'vitest';
import { AppError, ERRORS, detailOf, serviceUnavailable, type ErrorCode } from './error-catalogue.ts';

const templatesOf = (code: ErrorCode): string[] => {
  const entry: { title: string; detail?: string; causes?: Record<string, string> } = ERRORS[code];
  return [...(entry.detail === undefined ? [] : [entry.detail]), ...Object.values(entry.causes ?? {})];
};

describe('the error catalogue', () => {
  it('fills the usual detail of a code from the parameters its slots name', () => {
    const error = new AppError('SALE_NOT_FOUND', { saleId: 42 });

    expect({ status: error.status, code: error.code, message: error.message }).toEqual({
      status: 404,
      code: 'SALE_NOT_FOUND',
      message: 'no sale has the id 42',
    });
  });

  it("picks a cause's template by name, and says the title where a code is thrown without its only causes", () => {
    expect(new AppError('UNAUTHORIZED', { because: 'bad_subject', maxLength: 64 }).message).toBe(
      'the token subject must be a buyer id of 1 to 64 characters',
    );
    expect(detailOf('SALE_NOT_FOUND', { because: 'view', topic: 'sale:x' })).toBe('no such view: sale:x');
    expect(new AppError('RATE_LIMITED').message).toBe('Too many requests');
    expect(detailOf('SOLD_OUT')).toBe('The sale is sold out');
  });

  it('keeps the members and headers given beside the detail', () => {
    const error = new AppError('INSUFFICIENT_STOCK', { remaining: 2 }, { remaining: 2 }, { 'X-Test': '1' });

    expect({ message: error.message, extra: error.extra, headers: error.headers }).toEqual({
      message: 'only 2 left',
      extra: { remaining: 2 },
      headers: { 'X-Test': '1' },
    });
  });

  it('answers a backing service away with 503 and Retry-After, and a cause when one is named', () => {
    expect(serviceUnavailable()).toMatchObject({
      status: 503,
      message: 'a backing service is unavailable, retry shortly',
      headers: { 'Retry-After': '1' },
    });
    expect(serviceUnavailable({ because: 'deadline', ms: 50 }).message).toBe(
      'no answer within 50 ms: a backing service is slow or away, retry shortly',
    );
  });

  it('leaves braces that are not a slot as text', () => {
    expect(detailOf('CHALLENGE_REQUIRED', { because: 'missing', saleId: 7 })).toBe(
      'this waiting room asks a solved challenge: GET /api/sales/7/queue/challenge, solve it, and join with { "solution": "<ALTCHA payload>" }',
    );
  });

  it.each(Object.keys(ERRORS) as ErrorCode[])('words %s in templates whose slots are plain names', (code) => {
    for (const template of templatesOf(code)) {
      const slots = [...template.matchAll(/\{([^}]*)\}/g)].map(([, name]) => name!).filter((name) => !/[ "]/.test(name));
      for (const name of slots) expect(name).toMatch(/^[A-Za-z]\w*$/);
    }
  });
});
