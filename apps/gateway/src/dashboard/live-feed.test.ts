import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { LiveFeed } from './live-feed.ts';
import { quantileMs } from './traffic-sampler.ts';

const logger = createLogger('feed-test', 'silent');

describe('LiveFeed', () => {
  it('reads a topic once per interval for all its listeners, and stops when the last leaves', async () => {
    const reads: string[] = [];
    const feed = new LiveFeed(async (topic) => (reads.push(topic), { n: reads.length }), 50, logger);
    const got: string[][] = [[], [], []];
    const stops = got.map((into) => feed.subscribe('sale:1', (_topic, data) => into.push(data)));

    await sleep(275);
    const whileWatched = reads.length;
    for (const stop of stops) stop();
    await sleep(150);

    // One read at subscription, then one per 50 ms: about 6 in 275 ms, never one per listener.
    expect(whileWatched).toBeGreaterThanOrEqual(4);
    expect(whileWatched).toBeLessThanOrEqual(7);
    expect(reads.length).toBe(whileWatched);
    expect(got[0]).toEqual(got[2]);
    expect(got[0]!.length).toBe(whileWatched);
    expect(feed.activeTopics).toEqual([]);
    feed.close();
  });

  it('gives a listener who joins the last payload at once, and does not pile reads up behind a slow one', async () => {
    let reads = 0;
    const feed = new LiveFeed(
      async () => {
        reads += 1;
        await sleep(200);
        return { reads };
      },
      20,
      logger,
    );
    const first: string[] = [];
    const stop = feed.subscribe('overview', (_t, data) => first.push(data));
    await sleep(250);
    const late: string[] = [];
    const stopLate = feed.subscribe('overview', (_t, data) => late.push(data));

    expect(reads).toBeLessThanOrEqual(2);
    expect(late).toEqual([first.at(-1)]);
    stop();
    stopLate();
    feed.close();
  });

  it('reads every topic on the same tick, however apart their first listeners came', async () => {
    // Which turn of the event loop a read happened in: a new turn after each setImmediate.
    let turn = 0;
    let counting = false;
    const reads: { topic: string; turn: number }[] = [];
    const feed = new LiveFeed(
      async (topic) => {
        if (!counting) {
          counting = true;
          setImmediate(() => ((turn += 1), (counting = false)));
        }
        reads.push({ topic, turn });
        return {};
      },
      50,
      logger,
    );
    const stopA = feed.subscribe('sale:1', () => undefined);
    await sleep(20);
    const stopB = feed.subscribe('sale:2', () => undefined);
    await sleep(180);
    stopA();
    stopB();
    feed.close();

    // After each topic's first read (at its subscription), the two are read together at each tick.
    const ticks = reads.slice(2);
    expect(ticks.length).toBeGreaterThanOrEqual(4);
    expect(ticks.length % 2).toBe(0);
    for (let i = 0; i < ticks.length; i += 2) {
      expect(ticks[i]!.turn).toBe(ticks[i + 1]!.turn);
      expect(new Set([ticks[i]!.topic, ticks[i + 1]!.topic])).toEqual(new Set(['sale:1', 'sale:2']));
    }
  });

  it('pushes a failed read as { error }, so a page shows its figures are stale', async () => {
    const feed = new LiveFeed(
      async () => {
        throw new Error('MySQL is away');
      },
      1000,
      logger,
    );
    const got: string[] = [];
    const stop = feed.subscribe('overview', (_t, data) => got.push(data));
    await sleep(20);

    expect(got).toEqual([JSON.stringify({ error: 'MySQL is away' })]);
    stop();
    feed.close();
  });
});

describe('quantileMs', () => {
  it('interpolates inside the bucket the rank falls in, as histogram_quantile does', () => {
    const buckets = [
      { le: 0.001, count: 50 },
      { le: 0.002, count: 90 },
      { le: 0.005, count: 100 },
      { le: Infinity, count: 100 },
    ];
    expect(quantileMs(buckets, 0.5)).toBe(1);
    expect(quantileMs(buckets, 0.7)).toBe(1.5);
    expect(quantileMs(buckets, 0.99)).toBe(4.7);
    expect(
      quantileMs(
        [
          { le: 0.001, count: 0 },
          { le: Infinity, count: 0 },
        ],
        0.5,
      ),
    ).toBeNull();
  });
});
