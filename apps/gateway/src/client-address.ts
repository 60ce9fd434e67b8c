import type { IncomingMessage } from 'node:http';

/** Longest address kept: an IPv6 address with a zone fits; anything longer is not an address anyway. */
const MAX_ADDRESS_LENGTH = 64;

/**
 * The address a request's per-address budget is counted under.
 *
 * With no trusted proxy (TRUST_PROXY=0, the default) it is the socket's remote address, and
 * X-Forwarded-For is ignored: anyone can write that header, so trusting it would let one client
 * dodge the limit by sending a different made-up address with every request.
 *
 * With N trusted proxies (TRUST_PROXY=N), each of them appends the address it received the request from
 * to X-Forwarded-For, so the client is the Nth address from the right: everything further left was
 * written by the client itself (or by proxies we do not know) and proves nothing. When the header has
 * fewer than N entries (a proxy that does not append, or a request that reached the gateway around the
 * proxies) the leftmost entry is taken, the closest we have to the client; with no header at all, the
 * socket's address. Several X-Forwarded-For headers count as one list (Node joins them with commas).
 */
export function clientAddress(req: IncomingMessage, trustedProxies: number): string {
  const socketAddress = req.socket.remoteAddress ?? '';
  if (trustedProxies === 0) return socketAddress;
  const header = req.headers['x-forwarded-for'];
  if (header === undefined) return socketAddress;
  const entries = (typeof header === 'string' ? header : header.join(','))
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  if (entries.length === 0) return socketAddress;
  const chosen = entries[Math.max(0, entries.length - trustedProxies)]!;
  // Cut, so that what a client may have written there costs the limiter no more memory than an address.
  return chosen.length > MAX_ADDRESS_LENGTH ? chosen.slice(0, MAX_ADDRESS_LENGTH) : chosen;
}
