import { afterEach, describe, expect, it } from 'vitest';
import { redisNow } from '@flashsale/redis-store';
import { startSystem, type System } from '../support/system.ts';
import { createQueuedSale, doorBuyer } from '../support/door.ts';
import { sampleOf, scrape } from '../support/metrics-text.ts';
import { until } from '../support/until.ts';

// The door's gauges as an operator's Prometheus reads them from a real reconciler process (its look at
// each live sale reads the door without moving it), and what FlashsaleDoorStalled is judged on
// (infra/prometheus/alerts.yml; its rule unit test is alerts.test.yml).

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

describe("the door's metrics", () => {
  it('exports waiting, admitted and unused, the frontier, abandoned turns, room, rate and open per queued sale; a paused door reads closed', async () => {
    system = await startSystem({});
    const { ctx } = system;
    const { id, startsAt } = await createQueuedSale(ctx, system.gateways[0]!.url, {
      stock: 3,
      admitPerSecond: 2,
      admissionTtlSeconds: 2,
      startsIn: 1500,
    });
    const buyers = Array.from({ length: 8 }, (_, i) => doorBuyer(system!.gateways[0]!.url, id, `metrics-${i}`));
    for (const b of buyers) await b.join();
    const series = (name: string) => `${name}{sale_id="${id}"}`;
    const read = async () => {
      const text = await scrape(system!.reconciler!);
      return Object.fromEntries(
        [
          'waiting',
          'admitted_unused',
          'front',
          'abandoned_turns',
          'room',
          'awaiting_show_up',
          'no_show_rate',
          'admit_per_second',
          'open',
        ].map((n) => [n, sampleOf(text, series(`flashsale_door_${n}`))]),
      );
    };

    // Before the start: everyone waiting, the door closed.
    expect(await until(read, (m) => m.waiting === 8)).toMatchObject({
      waiting: 8,
      admitted_unused: 0,
      front: 0,
      room: 3,
      admit_per_second: 2,
      open: 0,
    });

    // After it, while the buyers ask: three admitted (the stock bound), none bought, five waiting.
    await until(
      () => redisNow(ctx.redis),
      (now) => now >= startsAt,
    );
    const held = await until(
      async () => {
        for (const b of buyers) await b.status();
        return read();
      },
      (m) => m.front === 3 && m.admitted_unused === 3,
    );
    // No show-up window (it is as long as the turn): nobody awaits showing up, no no-show measured.
    expect(held).toMatchObject({ waiting: 5, room: 0, awaiting_show_up: 0, no_show_rate: 0, open: 1 });

    // The turns run out unused (TTL 2 s): counted as abandoned once the door moves on, and the next three admitted.
    const moved = await until(
      async () => {
        for (const b of buyers) await b.status();
        return read();
      },
      (m) => m.abandoned_turns === 3,
      30_000,
    );
    expect(moved.front).toBeGreaterThan(3);

    const paused = await fetch(`${system.gateways[0]!.url}/api/admin/sales/${id}/admission`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ paused: true, admitPerSecond: 5 }),
    });
    expect(paused.status).toBe(200);
    expect(await until(read, (m) => m.open === 0)).toMatchObject({ admit_per_second: 5 });
  });
});
