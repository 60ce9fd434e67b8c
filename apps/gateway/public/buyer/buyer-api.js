// The buyer page's conversation with the gateway: a plain ES module with no DOM in it, so the page and
// the tests run the same code (a test drives hundreds of these in Node to count what waiting costs).
// Every answer is { status, body, retryAfter, serverTime }; a request that never got an answer (the
// network is down) throws, and the caller decides when to try again.

/** Seconds a Retry-After header asks for (the gateway sends whole seconds), or `fallback`. */
export function retryAfterOf(header, fallback) {
  const seconds = Number(header);
  return header !== null && header !== '' && Number.isFinite(seconds) && seconds >= 0 ? seconds : fallback;
}

/** Queue states after which polling the door tells nothing new. */
export const FINAL_QUEUE_STATES = new Set(['sold_out', 'ended', 'expired', 'used']);

/**
 * The API as one buyer of one sale calls it. `token` is the buyer's bearer token (the shop's), `base`
 * the gateway's origin ('' in the page: its own).
 */
export function createBuyerApi({ base = '', saleId, token, fetchImpl = globalThis.fetch.bind(globalThis) }) {
  const sale = `${base}/api/sales/${saleId}`;
  async function call(method, url, { body, ticket, auth = true } = {}) {
    const headers = {};
    if (auth) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (ticket) headers['queue-ticket'] = ticket;
    const res = await fetchImpl(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    let parsed = null;
    try {
      parsed = await res.json();
    } catch {
      parsed = null;
    }
    const date = Date.parse(res.headers.get('date') ?? '');
    return {
      status: res.status,
      body: parsed,
      retryAfter: retryAfterOf(res.headers.get('retry-after'), null),
      serverTime: Number.isNaN(date) ? null : date,
    };
  }
  return {
    sale: () => call('GET', sale, { auth: false }),
    challenge: () => call('GET', `${sale}/queue/challenge`),
    join: (solution, ticket) => call('POST', `${sale}/queue`, { body: solution === undefined ? {} : { solution }, ticket }),
    status: (ticket) => call('GET', `${sale}/queue`, { ticket }),
    here: (ticket) => call('POST', `${sale}/queue/here`, { body: {}, ticket }),
    purchase: (quantity) => call('POST', `${sale}/purchase`, { body: { quantity } }),
    reservation: (reservationId) => call('GET', `${base}/api/reservations/${encodeURIComponent(reservationId)}`),
    demoPayment: (reservationId) => call('POST', `${base}/s/${saleId}/demo-payment`, { body: { reservationId } }),
  };
}

/**
 * Waits in the sale's line: asks the door where the buyer stands, then asks again no sooner than the
 * answer's Retry-After (at least `minimumSeconds`), keeping the newest ticket in `tickets` so a reload
 * keeps the place and every poll is answered from the ticket (no Redis call). Returns the first answer
 * that is not `waiting`: `admitted`, a final state, `not_joined`, or a refusal (any status but 200).
 * `onAnswer` sees every answer; `sleep(ms)` waits (the page's own resolves early when the network
 * comes back, never sooner than asked otherwise).
 */
export async function waitInLine({ api, tickets, sleep, onAnswer = () => {}, minimumSeconds = 1 }) {
  for (;;) {
    const answer = await api.status(tickets.get());
    if (answer.status === 200 && answer.body && answer.body.ticket) tickets.set(answer.body.ticket);
    onAnswer(answer);
    const waiting = answer.status === 200 && answer.body && answer.body.state === 'waiting';
    const busy = answer.status === 503 || answer.status === 429;
    if (!waiting && !busy) return answer;
    await sleep(Math.max(minimumSeconds, answer.retryAfter ?? minimumSeconds) * 1000);
  }
}

/**
 * The ALTCHA solution the door takes: the challenge's fields with the number found, as base64 JSON.
 * `btoa` takes only Latin-1: every field is ASCII (hex, numbers, the salt's own characters).
 */
export function altchaPayload(challenge, number) {
  const { algorithm, challenge: hash, salt, signature } = challenge;
  return btoa(JSON.stringify({ algorithm, challenge: hash, number, salt, signature }));
}
