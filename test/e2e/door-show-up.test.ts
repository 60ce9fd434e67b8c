import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buyerToken } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { startSystem, type System } from '../support/system.ts';
import { createQueuedSale, doorBuyer } from '../support/door.ts';
import { bearer } from '../support/http.ts';
import { until } from '../support/until.ts';

// No-shows cost seconds: a turn opens with a show-up window; a buyer who shows up (POST
// .../queue/here, or a purchase attempt) has the full turn, one who does not loses it when the window
// lapses, and the door admits ahead of the no-show rate it measures, never selling more than the stock.
// A real gateway, worker and reconciler.

let system: System;
beforeAll(async () => {
  system = await startSystem({ workers: 1 });
});
afterAll(async () => {
  await system?.stop();
});

const url = () => system.gateways[0]!.url;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const here = async (saleId: number, userId: string, ticket: string) => {
  const res = await fetch(`${url()}/api/sales/${saleId}/queue/here`, {
    method: 'POST',
    headers: { ...bearer(buyerToken(userId)), 'queue-ticket': ticket },
  });
  return { status: res.status, body: (await res.json()) as { state: string; admittedUntil: string | null } };
};

/** The door as the operator reads it (POST .../admission with {} reads it and moves it on). */
async function operatorDoor(saleId: number) {
  const res = await fetch(`${url()}/api/admin/sales/${saleId}/admission`, {
    method: 'POST',
    headers: { ...bearer(system.ctx.config.ADMIN_TOKEN), 'content-type': 'application/json' },
    body: '{}',
  });
  expect(res.status).toBe(200);
  return (
    (await res.json()) as {
      door: { admitted: number; admittedUnused: number; awaitingShowUp: number; noShowRate: number; remaining: number };
    }
  ).door;
}

describe('the show-up window', () => {
  it('a no-show loses the turn when the window lapses and the next buyer is admitted; a buyer who calls /queue/here keeps the full turn', async () => {
    const { id } = await createQueuedSale(system.ctx, url(), {
      stock: 2,
      admitPerSecond: 50,
      admissionTtlSeconds: 300,
      showUpSeconds: 3,
      startsIn: 300,
    });
    await pause(600);
    // Joined after the start: placed in arrival order.
    const [comes, absent, next] = [doorBuyer(url(), id, 'comes'), doorBuyer(url(), id, 'absent'), doorBuyer(url(), id, 'next-in-line')];
    for (const buyer of [comes, absent, next]) expect((await buyer.join()).status).toBe(200);

    const admitted = await comes.waitFor('admitted');
    const shown = await here(id, comes.userId, comes.ticket!);
    expect(shown).toMatchObject({ status: 200, body: { state: 'admitted' } });
    // The full turn: about 300 s from the admission, where the window gave 3 s.
    expect(Date.parse(shown.body.admittedUntil!) - Date.parse(admitted.admittedUntil!)).toBeGreaterThan(250_000);

    // `absent` never comes (the test asks for it: a status is not showing up). With the two units held by
    // two turns, `next-in-line` waits until absent's turn is overdue (half its 3 s window), then is
    // admitted ahead of it; absent's turn lapses with its window, recorded.
    expect((await next.status()).body).toMatchObject({ state: 'waiting', position: 1 });
    const nextTurn = await next.waitFor('admitted', 60_000);
    const turns = saleKeys(system.ctx.config.REDIS_PREFIX, id).turns;
    // Recorded abandoned (0) at the door's next move once the window ran out: asked until then.
    await until(
      async () => {
        await absent.status();
        return system.ctx.redis.zscore(turns, absent.userId);
      },
      (turn) => turn === '0',
      60_000,
    );
    expect((await absent.status()).body).toMatchObject({ state: 'expired' });
    // The next buyer's turn opens with its window too; the one who showed up still holds theirs.
    expect(Date.parse(nextTurn.admittedUntil!)).toBeLessThan(Date.parse(shown.body.admittedUntil!) - 200_000);
    expect((await comes.status()).body).toMatchObject({ state: 'admitted', admittedUntil: shown.body.admittedUntil });
    expect((await comes.purchase()).status).toBe(202);
    // A purchase attempt is showing up: the next buyer buys without calling /queue/here.
    expect((await next.purchase()).status).toBe(202);
  });

  it('with most accounts never coming, the frontier moves ahead of the no-show rate, at most ten turns a unit, and sells the stock to the buyers who come, no more', async () => {
    const stock = 3;
    const { id } = await createQueuedSale(system.ctx, url(), {
      stock,
      admitPerSecond: 20,
      admissionTtlSeconds: 300,
      showUpSeconds: 1,
      startsIn: 300,
    });
    await pause(600);
    // 45 accounts that never come back, then 4 buyers who do, last in line.
    for (let i = 0; i < 45; i++) expect((await doorBuyer(url(), id, `farm-${i}`).join()).status).toBe(200);
    const honest = Array.from({ length: stock + 1 }, (_, i) => doorBuyer(url(), id, `honest-${i}`));
    for (const buyer of honest) expect((await buyer.join()).status).toBe(200);

    const seen: { admitted: number; admittedUnused: number; noShowRate: number; remaining: number }[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        seen.push(await operatorDoor(id));
        await pause(200);
      }
    })();
    // Each honest buyer polls until admitted, then buys; once the stock is sold the last one stops asking
    // (nobody pays here, so the units may come back and the door tells it `waiting`, not `sold_out`).
    let sold = 0;
    const outcomes = await Promise.all(
      honest.map(async (buyer) => {
        for (;;) {
          const { body } = await buyer.status();
          if (body.state === 'admitted') {
            const { status } = await buyer.purchase();
            if (status === 202) sold++;
            return status;
          }
          if (body.state !== 'waiting' || sold === stock) return body.state;
          await pause(250);
        }
      }),
    );
    watching = false;
    await watch;

    expect(outcomes.filter((outcome) => outcome === 202)).toHaveLength(stock);
    // The last one: still waiting for a unit that may come back, or refused at a turn admitted ahead (410).
    expect(
      outcomes.filter((outcome) => outcome !== 202),
      JSON.stringify(outcomes),
    ).toEqual([expect.toBeOneOf(['waiting', 410])]);
    // Ahead of the no-show rate: more turns ran unused than there were units; ten a unit at most that are
    // not overdue, and overdue ones (a buyer who did not come in half the 1 s window) lapse with it: at
    // most a window's worth of admissions (20 a second) more.
    expect(Math.max(...seen.map((door) => door.admittedUnused - door.remaining))).toBeGreaterThan(0);
    for (const door of seen) expect(door.admittedUnused).toBeLessThanOrEqual(10 * stock + 20);
    expect(Math.max(...seen.map((door) => door.noShowRate))).toBeGreaterThan(0.5);
    const keys = saleKeys(system.ctx.config.REDIS_PREFIX, id);
    expect(await system.ctx.redis.hget(keys.meta, 'remaining')).toBe('0');
  });
});
