import { describe, expect, it } from 'vitest';
import {
  histogramQuantile,
  leastSquaresSlope,
  LogHistogram,
  parseGatewayMetrics,
  processSummaries,
  runTotals,
  seriesOf,
} from './analysis.ts';
import type { GatewayCounters } from './sample.ts';
import { chartSvg, niceTicks, pathOf, renderReport } from './report.ts';
import { judgeLedger, type SaleStats } from './ledger.ts';
import { parseSoakArgs, stockFor } from './options.ts';
import type { ClientSummary, Sample, SoakRun } from './sample.ts';

const BOUNDS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, Number.POSITIVE_INFINITY];

/** Cumulative bucket counts from counts per bucket. */
const cumulative = (perBucket: number[]) => perBucket.map((_, i) => perBucket.slice(0, i + 1).reduce((a, b) => a + b, 0));

describe('parseGatewayMetrics', () => {
  it('reads the purchase counters by outcome and the latency histogram, whatever else /metrics holds', () => {
    const text = [
      '# HELP flashsale_purchases_total Purchase requests by outcome.',
      '# TYPE flashsale_purchases_total counter',
      'flashsale_purchases_total{outcome="reserved"} 1200',
      'flashsale_purchases_total{outcome="SOLD_OUT"} 3',
      'flashsale_gateway_process_resident_memory_bytes 123456',
      'flashsale_purchase_duration_seconds_bucket{le="0.001"} 10',
      'flashsale_purchase_duration_seconds_bucket{le="+Inf"} 12',
      'flashsale_purchase_duration_seconds_bucket{le="0.0005"} 4',
      'flashsale_purchase_duration_seconds_sum 0.02',
      'flashsale_purchase_duration_seconds_count 12',
    ].join('\n');
    expect(parseGatewayMetrics(text)).toEqual({
      outcomes: { reserved: 1200, SOLD_OUT: 3 },
      latency: { bounds: [0.0005, 0.001, Number.POSITIVE_INFINITY], counts: [4, 10, 12] },
    });
  });
});

describe('histogramQuantile', () => {
  it('interpolates within the bucket the quantile falls in, over what was observed between two readings', () => {
    const before = cumulative([100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    // Since then: 50 in (0, 0.5 ms], 40 in (0.5, 1], 10 in (1, 2].
    const after = cumulative([150, 40, 10, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(histogramQuantile(0.5, BOUNDS, before, after)).toBeCloseTo(0.0005, 9);
    expect(histogramQuantile(0.25, BOUNDS, before, after)).toBeCloseTo(0.00025, 9);
    expect(histogramQuantile(0.7, BOUNDS, before, after)).toBeCloseTo(0.0005 + 0.0005 * (20 / 40), 9);
    expect(histogramQuantile(0.99, BOUNDS, before, after)).toBeCloseTo(0.001 + 0.001 * (9 / 10), 9);
  });

  it('is null when nothing was observed, and the largest finite bound when the quantile is in +Inf', () => {
    const same = cumulative([5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(histogramQuantile(0.5, BOUNDS, same, same)).toBeNull();
    expect(histogramQuantile(0.99, BOUNDS, new Array<number>(11).fill(0), cumulative([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10]))).toBe(1);
  });
});

describe('leastSquaresSlope', () => {
  it('is the slope of a line through the points, leaving out gaps', () => {
    expect(
      leastSquaresSlope([
        [0, 1],
        [1, 3],
        [2, 5],
        [3, null],
        [4, 9],
      ]),
    ).toBeCloseTo(2, 12);
    expect(
      leastSquaresSlope([
        [0, 10],
        [1, 9],
        [2, 10],
        [3, 9],
      ]),
    ).toBeCloseTo(-0.2, 12);
  });

  it('is null with fewer than two points or all at one x', () => {
    expect(leastSquaresSlope([[0, 1]])).toBeNull();
    expect(
      leastSquaresSlope([
        [1, 1],
        [1, 2],
      ]),
    ).toBeNull();
  });
});

describe('LogHistogram', () => {
  it('reads percentiles within 1 % of the exact ones', () => {
    const histogram = new LogHistogram();
    for (let i = 1; i <= 10_000; i += 1) histogram.record(i / 100);
    expect(histogram.count).toBe(10_000);
    expect(histogram.percentile(50)! / 50).toBeGreaterThan(0.99);
    expect(histogram.percentile(50)! / 50).toBeLessThan(1.01);
    expect(histogram.percentile(99)! / 99).toBeGreaterThan(0.99);
    expect(histogram.percentile(99)! / 99).toBeLessThan(1.01);
    expect(new LogHistogram().percentile(50)).toBeNull();
  });
});

/**
 * A synthetic run of `seconds` seconds sampled every 5: 1000 accepts a second, the gateway's latency in
 * its 1-2 ms bucket, the gateway's RSS jumping 60 MiB during warm-up then growing 2 MiB a minute, a
 * worker flat, a reconciler using a tenth of the gateway's CPU.
 */
function syntheticRun(seconds = 600): SoakRun {
  const samples: Sample[] = [];
  for (let t = 0; t <= seconds; t += 5) {
    const warm = t >= 0.1 * seconds;
    const gateway: GatewayCounters = {
      outcomes: { reserved: 1000 * t },
      latency: { bounds: BOUNDS, counts: cumulative([0, 0, 1000 * t, 0, 0, 0, 0, 0, 0, 0, 0]) },
    };
    samples.push({
      t,
      at: new Date(Date.UTC(2026, 0, 1) + t * 1000).toISOString(),
      processes: {
        gateway: { rssMiB: 100 + (warm ? 60 : 0) + (2 * t) / 60, cpuSeconds: 0.5 * t },
        'worker-1': { rssMiB: 150, cpuSeconds: 0.2 * t },
        reconciler: { rssMiB: 120, cpuSeconds: 0.05 * t },
      },
      redis: { usedMiB: 10 + t / 10, rssMiB: 12 + t / 10, saleKeysMiB: t / 12 },
      stream: { length: Math.min(10_000, 1000 * t), lag: t % 10 === 0 ? 0 : 30, pending: 64, deadLettered: 0 },
      gateway,
      unitsWritten: Math.max(0, 1000 * t - 500),
    });
  }
  const client: ClientSummary = {
    generator: 'wrk',
    requests: 1000 * seconds,
    ok: 1000 * seconds,
    refused: 0,
    errors: 0,
    dropped: 0,
    seconds,
    p50Ms: 1.5,
    p99Ms: 4,
    maxMs: 20,
  };
  return {
    parameters: {
      mode: 'wrk',
      load: 'wrk -t1 -c64 -d600s',
      connections: 64,
      rate: null,
      loadSeconds: seconds,
      sampleSeconds: 5,
      stock: 60_000_000,
      saleId: 7,
      redisPrefix: 'soak-abcdef',
      database: 'flashsale_soak_abcdef',
      processes: '1 gateway, 2 workers, 1 reconciler',
      commit: 'abc1234',
      machine: 'test machine',
      node: 'v24',
      loadAverageAtStart: 0.5,
      startedAt: '2026-01-01T00:00:00.000Z',
    },
    samples,
    loadEndT: seconds,
    client,
    ledger: judgeLedger({
      stats: balancedStats(1000 * seconds),
      buyersInRedis: 1000 * seconds,
      client,
      connections: 64,
      auditAfterDrain: true,
      drainSeconds: 0.4,
    }),
    exits: { gateway: 0, 'worker-1': 0, reconciler: 0 },
    logExcerpts: { gateway: [] },
    notes: [],
  };
}

function balancedStats(units: number): SaleStats {
  return {
    stock: 60_000_000,
    remaining: 60_000_000 - units,
    inFlight: 0,
    ordersInDb: units,
    unitsInDb: units,
    deadLettered: 0,
    consistent: true,
    lost: { reservations: 0, units: 0 },
    audit: { drift: 0, checkedAt: '2026-01-01T00:10:01.000Z' },
  };
}

describe('processSummaries', () => {
  it('takes the RSS slope after the first 20 % of the load, so the warm-up jump does not count', () => {
    const run = syntheticRun();
    const [gateway, worker, reconciler] = processSummaries(run.samples, run.loadEndT);
    expect(gateway!.name).toBe('gateway');
    expect(gateway!.rssSlopeMiBPerMin).toBeCloseTo(2, 6);
    expect(worker!.rssSlopeMiBPerMin).toBeCloseTo(0, 9);
    expect(gateway!.cpuSeconds).toBeCloseTo(300, 6);
    expect(gateway!.cpuPercent).toBeCloseTo(50, 6);
    expect(reconciler!.cpuSeconds).toBeCloseTo(30, 6);
    // Over all samples, the jump would read as a much steeper growth.
    expect(leastSquaresSlope(run.samples.map((s) => [s.t / 60, s.processes.gateway!.rssMiB]))).toBeGreaterThan(5);
  });

  it('leaves the samples after the load out of the load window', () => {
    const run = syntheticRun();
    const summaries = processSummaries(run.samples, 300);
    expect(summaries[0]!.cpuSeconds).toBeCloseTo(150, 6);
  });
});

describe('runTotals', () => {
  it('gives the accept rate, the latency of the whole load and the reconciler CPU as a fraction of the gateway one', () => {
    const totals = runTotals(syntheticRun().samples, 600);
    expect(totals.accepted).toBe(600_000);
    expect(totals.acceptsPerSecond).toBeCloseTo(1000, 6);
    expect(totals.refusals).toEqual({});
    expect(totals.gatewayP50Ms).toBeCloseTo(1.5, 6);
    expect(totals.reconcilerToGatewayCpu).toBeCloseTo(0.1, 6);
  });
});

describe('seriesOf', () => {
  it('turns counters into per-interval rates and keeps the per-sample readings', () => {
    const series = seriesOf(syntheticRun(60).samples);
    expect(series.acceptsPerSecond).toHaveLength(12);
    expect(series.acceptsPerSecond.every(([, v]) => v === 1000)).toBe(true);
    expect(series.cpuPercent.gateway!.every(([, v]) => Math.abs(v! - 50) < 1e-9)).toBe(true);
    expect(series.streamLength).toHaveLength(13);
    expect(Object.keys(series.rssMiB)).toEqual(['gateway', 'worker-1', 'reconciler']);
  });

  it('measures an interval from a sample at least half a second back, not from one taken just before', () => {
    const samples = syntheticRun(10).samples;
    const extra = { ...samples.at(-1)!, t: 10.05, processes: { gateway: { rssMiB: 1, cpuSeconds: 5.05 } } };
    const series = seriesOf([...samples, extra]);
    // From the sample at t = 5 (CPU 2.5 s), not the one at t = 10 (5 s) 50 ms earlier.
    const [t, percent] = series.cpuPercent.gateway!.at(-1)!;
    expect(t).toBe(10.05);
    expect(percent).toBeCloseTo(((5.05 - 2.5) / 5.05) * 100, 9);
  });
});

describe('charts', () => {
  it('breaks a line at a gap and draws round ticks', () => {
    expect(
      pathOf(
        [
          [0, 1],
          [1, 2],
          [2, null],
          [3, 4],
        ],
        (t) => t * 10,
        (v) => v,
      ),
    ).toBe('M0.0 1.0L10.0 2.0M30.0 4.0');
    expect(niceTicks(0, 8.3, 4)).toEqual([0, 2.5, 5, 7.5, 10]);
    expect(niceTicks(0, 1234, 4)).toEqual([0, 500, 1000, 1500]);
  });

  it('renders a chart with a path and a legend entry per series', () => {
    const svg = chartSvg(
      {
        title: 'Throughput',
        unit: 'per second',
        series: [
          {
            name: 'accepted',
            color: '#123456',
            points: [
              [0, 1],
              [5, 3],
            ],
          },
          {
            name: 'written <ok>',
            color: '#654321',
            points: [
              [0, 2],
              [5, 2],
            ],
          },
        ],
      },
      { width: 600, height: 200, xMax: 5 },
    );
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg.match(/<path class="series"/g)).toHaveLength(2);
    expect(svg).toContain('data-series="accepted"');
    expect(svg).toContain('written &lt;ok&gt;');
  });
});

describe('renderReport', () => {
  const run = syntheticRun();
  const { html, svg, totals } = renderReport(run);

  it('draws every chart of the HTML report, each series a line', () => {
    expect(html.match(/<svg /g)).toHaveLength(7);
    for (const title of [
      'Throughput',
      'Accept latency',
      'Resident memory per process',
      'CPU per process',
      'Redis memory',
      'Sale stream',
      "Order writers' backlog",
    ])
      expect(html).toContain(`>${title}<`);
    for (const series of [
      'accepted (202)',
      'orders written',
      'p50 gateway',
      'p99 gateway',
      'gateway',
      'worker-1',
      'reconciler',
      'length (XLEN)',
      'lag (not delivered)',
      'pending (not acknowledged)',
    ]) {
      expect(html).toContain(`data-series="${series}"`);
    }
  });

  it('heads the HTML with the parameters, the totals, the ledger verdict, the RSS slopes and the CPU fraction', () => {
    expect(html).toContain('Ledger PASS');
    expect(html).toContain('wrk -t1 -c64 -d600s');
    expect(html).toContain('+2.00'); // the gateway's RSS slope, MiB/min
    expect(html).toContain("10.0 % of the gateway's");
    expect(html).toContain('1000/s on average');
    expect(totals.processes.map((p) => p.name)).toEqual(['gateway', 'worker-1', 'reconciler']);
  });

  it('says, beside the totals, why the load generator, the gateway and Redis count different numbers of accepts', () => {
    expect(html).toContain('Three counts of accepted purchases, each true of what it counts');
    expect(html).toContain('the units taken in Redis (the ledger below) are every purchase the reserve script accepted');
  });

  it('is self-contained: no script, stylesheet or image from elsewhere', () => {
    expect(html).not.toMatch(/<script|<link|<img|@import|src=/i);
    expect(html.replace(/xmlns="http:\/\/www\.w3\.org\/2000\/svg"/g, '')).not.toMatch(/https?:/);
  });

  it('stacks the main charts in one standalone SVG under a headline', () => {
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" viewBox="0 0 900 \d+"/);
    expect(svg.match(/<g class="chart"/g)).toHaveLength(7);
    expect(svg).toContain('1000 accepts/s for 10.0 min (wrk -c64)');
    expect(svg).toContain('ledger PASS');
  });

  it('says FAIL and why when the ledger does not balance', () => {
    const failed = {
      ...run,
      ledger: judgeLedger({
        stats: { ...balancedStats(100), unitsInDb: 99 },
        buyersInRedis: 100,
        client: { ...run.client, ok: 100 },
        connections: 64,
        auditAfterDrain: true,
        drainSeconds: 1,
      }),
    };
    const rendered = renderReport(failed);
    expect(rendered.html).toContain('Ledger FAIL: units taken in Redis (100) differ from units in MySQL (99)');
    expect(rendered.svg).toContain('ledger FAIL');
  });
});

describe('judgeLedger', () => {
  const client: ClientSummary = {
    generator: 'wrk',
    requests: 1000,
    ok: 1000,
    refused: 0,
    errors: 0,
    dropped: 0,
    seconds: 1,
    p50Ms: 1,
    p99Ms: 2,
    maxMs: 3,
  };
  it('passes a drained, balanced sale whose buyers match the 2xx counted (up to one per connection more)', () => {
    expect(
      judgeLedger({ stats: balancedStats(1010), buyersInRedis: 1010, client, connections: 64, auditAfterDrain: true, drainSeconds: 1 }),
    ).toMatchObject({ passed: true, failures: [], takenInRedis: 1010 });
  });

  it('fails on anything in flight, dead-lettered, lost, drifting, refused, or buyers the load generator cannot account for', () => {
    const verdict = judgeLedger({
      stats: {
        ...balancedStats(1000),
        inFlight: 2,
        deadLettered: 1,
        lost: { reservations: 3, units: 3 },
        audit: { drift: -1, checkedAt: 'x' },
      },
      buyersInRedis: 1000,
      client: { ...client, ok: 900, refused: 100 },
      connections: 64,
      auditAfterDrain: true,
      drainSeconds: 1,
    });
    expect(verdict.passed).toBe(false);
    expect(verdict.failures).toHaveLength(6);
    expect(
      judgeLedger({
        stats: { ...balancedStats(1000), audit: null },
        buyersInRedis: 1000,
        client,
        connections: 64,
        auditAfterDrain: false,
        drainSeconds: 1,
      }).failures,
    ).toEqual(['no audit of the sale has run']);
  });
});

describe('parseSoakArgs', () => {
  it('reads minutes, seconds, a rate and the rest, with defaults', () => {
    expect(parseSoakArgs([])).toMatchObject({
      seconds: 600,
      rate: undefined,
      connections: 64,
      sampleSeconds: 5,
      outDir: 'loadtest/results',
      keep: false,
    });
    expect(parseSoakArgs(['--minutes', '0.5', '--rate', '2000'])).toMatchObject({ seconds: 30, rate: 2000 });
    expect(parseSoakArgs(['--seconds=8', '--sample-seconds', '1', '--out', '/tmp/x', '--keep'])).toMatchObject({
      seconds: 8,
      sampleSeconds: 1,
      outDir: '/tmp/x',
      keep: true,
    });
  });

  it('refuses what it cannot run', () => {
    expect(() => parseSoakArgs(['--minutes'])).toThrow("Option '--minutes <value>' argument missing");
    expect(() => parseSoakArgs(['--rate', '0'])).toThrow('--rate must be');
    expect(() => parseSoakArgs(['--minutes', '1', '--seconds', '5'])).toThrow('give one');
    expect(() => parseSoakArgs(['--fast'])).toThrow("Unknown option '--fast'");
    expect(() => parseSoakArgs(['10'])).toThrow("Unexpected argument '10'");
  });

  it('answers --help and -h with the usage, not a run', () => {
    expect(parseSoakArgs(['--help'])).toBe('help');
    expect(parseSoakArgs(['--seconds', '5', '-h'])).toBe('help');
  });

  it('gives the sale stock for the whole run', () => {
    expect(stockFor(600)).toBe(60_000_000);
    expect(stockFor(8)).toBe(1_000_000);
  });
});
