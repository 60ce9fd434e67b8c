import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { clientAddress } from './client-address.ts';

/** A request as the limiter sees it: the socket's peer and the headers Node parsed. */
function request(remoteAddress: string | undefined, forwardedFor?: string | string[]): IncomingMessage {
  return {
    socket: { remoteAddress },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  } as unknown as IncomingMessage;
}

describe('clientAddress', () => {
  it('is the socket address without trusted proxies, whatever X-Forwarded-For claims', () => {
    expect(clientAddress(request('10.0.0.1', '203.0.113.7'), 0)).toBe('10.0.0.1');
    expect(clientAddress(request('10.0.0.1'), 0)).toBe('10.0.0.1');
  });

  it('is the rightmost X-Forwarded-For address behind one trusted proxy: what the proxy appended', () => {
    expect(clientAddress(request('10.0.0.1', 'forged, 203.0.113.7'), 1)).toBe('203.0.113.7');
  });

  it('is the Nth address from the right behind N trusted proxies', () => {
    expect(clientAddress(request('10.0.0.2', 'forged, 203.0.113.7, 10.0.0.1'), 2)).toBe('203.0.113.7');
    expect(clientAddress(request('10.0.0.3', 'a, b, c, d'), 3)).toBe('b');
  });

  it('is the leftmost address when the header has fewer entries than trusted proxies', () => {
    expect(clientAddress(request('10.0.0.1', '203.0.113.7'), 3)).toBe('203.0.113.7');
    expect(clientAddress(request('10.0.0.1', '198.51.100.1, 203.0.113.7'), 3)).toBe('198.51.100.1');
  });

  it('is the socket address when a trusted proxy sent no X-Forwarded-For, or an empty one', () => {
    expect(clientAddress(request('10.0.0.1'), 1)).toBe('10.0.0.1');
    expect(clientAddress(request('10.0.0.1', ' , '), 1)).toBe('10.0.0.1');
  });

  it('reads several X-Forwarded-For headers as one list, ignoring blanks and spaces', () => {
    expect(clientAddress(request('10.0.0.1', ['forged', '203.0.113.7 ,  ']), 1)).toBe('203.0.113.7');
    expect(clientAddress(request('10.0.0.1', '2001:db8::1,,198.51.100.1'), 2)).toBe('2001:db8::1');
  });

  it('keeps at most 64 characters of an entry, so made-up ones cost the limiter no more than an address', () => {
    expect(clientAddress(request('10.0.0.1', 'x'.repeat(10_000)), 1)).toBe('x'.repeat(64));
  });

  it('is empty for a socket already gone', () => {
    expect(clientAddress(request(undefined), 0)).toBe('');
  });
});
