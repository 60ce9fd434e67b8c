// What the dashboard charts, as lists dashboard.js draws with charts.js: a classic script
// loaded before dashboard.js, no build step.
/* exported SALE_CHARTS, PROCESS_CHARTS */
'use strict';

// How each series is drawn, by its key: a line's label and color. The sale's series (sale-history.ts),
// this gateway's latencies, and its refusal reasons as an operator says them (a code not listed is
// shown in lower case, in one of OTHER_COLORS).
const LINES = {
  remaining: ['remaining', '#3d7bfd'],
  stock: ['stock', '#9aa4b8'],
  acceptedPerSecond: ['accepted', '#2e9e5b'],
  inFlight: ['in flight', '#e67e22'],
  lag: ['lag (not yet delivered)', '#c0392b'],
  writtenPerSecond: ['written', '#8e44ad'],
  waiting: ['waiting', '#3d7bfd'],
  admittedUnused: ['admitted, not bought yet', '#2e9e5b'],
  front: ['frontier (places given a turn)', '#9aa4b8'],
  abandoned: ['abandoned turns', '#c0392b'],
  p50Ms: ['p50', '#3d7bfd'],
  p99Ms: ['p99', '#c0392b'],
  SOLD_OUT: ['sold out', '#c0392b'],
  ALREADY_PURCHASED: ['duplicate', '#e67e22'],
  RATE_LIMITED: ['rate limited', '#8e44ad'],
  NOT_ADMITTED: ['not admitted', '#16a085'],
  SALE_PAUSED: ['paused', '#d4ac0d'],
  SALE_ENDED: ['ended', '#7f8c8d'],
  SALE_NOT_STARTED: ['not started', '#5d6d7e'],
  INSUFFICIENT_STOCK: ['too few left', '#a04000'],
};
const OTHER_COLORS = ['#34495e', '#b03a2e', '#1f618d', '#117864', '#7d3c98'];
const line = (key, i) => ({
  key,
  label: LINES[key] ? LINES[key][0] : key.toLowerCase().replaceAll('_', ' '),
  color: LINES[key] ? LINES[key][1] : OTHER_COLORS[i % OTHER_COLORS.length],
});

// A chart: where it is drawn (`id`), its title, unit and note (whose figures these are), and the series
// it draws (keys of LINES).
const chart = (terms, keys) => ({ ...terms, lines: keys.map(line) });

// The charts of a sale, in order. `lines` name series of the sale's history (sale-history.ts). A chart
// marked `optional` is drawn only for a sale whose history holds one of its series: the extension point
// for what a sale gains, e.g. a queued sale's admission (the gateway adds waiting, admitted and frontier
// through SaleHistory's extraSeries; one entry here draws them).
const SALE_CHARTS = [
  chart({ id: 'chart-remaining', title: 'Remaining and stock', unit: 'units' }, ['remaining', 'stock']),
  chart({ id: 'chart-accepted', title: 'Units accepted per second', note: 'every gateway', unit: 'units/s' }, ['acceptedPerSecond']),
  chart({ id: 'chart-backlog', title: "Entries in flight and workers' lag", unit: 'entries' }, ['inFlight', 'lag']),
  chart({ id: 'chart-written', title: 'Orders written per second', note: 'every worker', unit: 'orders/s' }, ['writtenPerSecond']),
  chart({ id: 'chart-door', title: 'Waiting room', note: 'a queued sale', unit: 'buyers', optional: true }, [
    'waiting',
    'admittedUnused',
    'front',
    'abandoned',
  ]),
];

const PROCESS_CHARTS = [
  {
    id: 'chart-refusals',
    title: 'Refusals per second by reason',
    note: 'this gateway process',
    unit: 'refusals/s',
    lines: (points) =>
      Object.keys(points ? points.series : {})
        .filter((name) => name !== 'reserved' && !name.endsWith('Ms'))
        .sort()
        .map(line),
  },
  chart({ id: 'chart-latency', title: 'Purchase latency', note: 'this gateway process, every outcome', unit: 'ms' }, ['p50Ms', 'p99Ms']),
];
