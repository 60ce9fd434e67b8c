import { describe, expect, it } from 'vitest';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { manualClock } from '../../../../test/support/clock.ts';
import { expectProblem } from '../../../../test/support/http.ts';
import { capturedLog } from '../../../../test/support/logs.ts';

// An unsigned flood of the payment provider's endpoint: turned away by a per-address budget before any
// signature is checked, and summed up in the log instead of a line per request.
const clock = manualClock();
const { logger, lines: logs } = capturedLog();
let gateway: TestGateway;
gatewayPerFile(
  (_ctx, server) => {
    gateway = server;
  },
  { env: { PAYMENT_EVENTS_PER_ADDRESS_PER_SECOND: '40' }, now: clock.now, logger },
);

const unsigned = () =>
  fetch(`${gateway.url}/api/payments/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'payment-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` },
    body: JSON.stringify({ id: 'evt_flood', type: 'payment.succeeded', reservationId: '1-x', amountCents: 1 }),
  });

describe('a flood of unsigned payment events', () => {
  it('gets 401 up to the per-address budget, then 429, and writes one log line, not one per request', async () => {
    clock.nextSecond();
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) statuses.push((await unsigned()).status);

    expect({ unauthorized: statuses.filter((s) => s === 401).length, limited: statuses.filter((s) => s === 429).length }).toEqual({
      unauthorized: 40,
      limited: 160,
    });
    // The summary names the address the flood came from (operations.md, "Floods do not become log floods").
    expect(logs.filter((line) => line.msg === 'payment events refused: bad signature')).toEqual([
      expect.objectContaining({ level: 40, refused: { mismatch: 1 }, lastAddress: '127.0.0.1' }),
    ]);
    expect(logs.filter((line) => line.level >= 40)).toHaveLength(1);

    clock.nextSecond();
    await expectProblem(await unsigned(), 401, 'UNAUTHORIZED', 'the Payment-Signature is not valid');
  });
});
