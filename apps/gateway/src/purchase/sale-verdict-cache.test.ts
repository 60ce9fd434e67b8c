import { describe, expect, it } from 'vitest';
import { SaleVerdictCache } from './sale-verdict-cache.ts';

const NO_HOLDERS = new Map<string, string>();

function listeningCache(ttlMs = 1000) {
  let now = 10_000;
  const cache = new SaleVerdictCache(ttlMs, () => now);
  cache.setListening(true);
  return { cache, advance: (ms: number) => (now += ms) };
}

describe('SaleVerdictCache', () => {
  it('keeps a verdict until its TTL is over', () => {
    const { cache, advance } = listeningCache(1000);
    cache.remember(7, 'SOLD_OUT', cache.ticket(), NO_HOLDERS);

    advance(999);
    expect(cache.get(7)?.verdict).toBe('SOLD_OUT');
    advance(1);
    expect(cache.get(7)?.verdict).toBeUndefined();
  });

  it('drops the verdict of an announced sale and keeps the others', () => {
    const { cache } = listeningCache();
    cache.remember(7, 'SOLD_OUT', cache.ticket(), NO_HOLDERS);
    cache.remember(8, 'SALE_ENDED', cache.ticket(), NO_HOLDERS);

    cache.forget(7);

    expect([cache.get(7)?.verdict, cache.get(8)?.verdict]).toEqual([undefined, 'SALE_ENDED']);
  });

  it('refuses a verdict whose Redis answer was asked for before an announcement (a reply racing a rebuild)', () => {
    const { cache } = listeningCache();
    const ticket = cache.ticket();

    cache.forget(7);
    cache.remember(7, 'SOLD_OUT', ticket, NO_HOLDERS);

    expect(cache.get(7)?.verdict).toBeUndefined();
    cache.remember(7, 'SOLD_OUT', cache.ticket(), NO_HOLDERS);
    expect(cache.get(7)?.verdict).toBe('SOLD_OUT');
  });

  it('neither keeps nor makes verdicts while announcements cannot reach it', () => {
    const { cache } = listeningCache();
    cache.remember(7, 'SOLD_OUT', cache.ticket(), NO_HOLDERS);

    cache.setListening(false);
    expect(cache.get(7)?.verdict).toBeUndefined();
    cache.remember(7, 'SOLD_OUT', cache.ticket(), NO_HOLDERS);
    expect(cache.get(7)?.verdict).toBeUndefined();

    cache.setListening(true);
    cache.remember(7, 'SOLD_OUT', cache.ticket(), NO_HOLDERS);
    expect(cache.get(7)?.verdict).toBe('SOLD_OUT');
  });

  it('keeps the holders the verdict does not apply to', () => {
    const { cache } = listeningCache();
    cache.remember(7, 'SOLD_OUT', cache.ticket(), new Map([['alice', '7-reservation']]));

    expect(cache.get(7)?.holders.get('alice')).toBe('7-reservation');
    expect(cache.get(7)?.holders.get('bob')).toBeUndefined();
  });

  it('forgets everything on forgetAll', () => {
    const { cache } = listeningCache();
    cache.remember(7, 'SOLD_OUT', cache.ticket(), NO_HOLDERS);
    cache.remember(8, 'SALE_ENDED', cache.ticket(), NO_HOLDERS);

    cache.forgetAll();

    expect(cache.size).toBe(0);
  });
});
