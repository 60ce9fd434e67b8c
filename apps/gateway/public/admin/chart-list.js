// What the dashboard charts, as lists dashboard.js draws with charts.js: a classic script
// loaded before dashboard.js, no build step.
/* exported SALE_CHARTS, PROCESS_CHARTS */
'use strict';

// The charts of a sale, in order. `lines` name series of the sale's history (sale-history.ts). A chart
// marked `optional` is drawn only for a sale whose history holds one of its series: the extension point
// for what a sale gains, e.g. a queued sale's admission (the gateway adds waiting, admitted and frontier
// through SaleHistory's extraSeries; one entry here draws them).
const SALE_CHARTS = [
  {
    id: 'chart-remaining',
    title: 'Remaining and stock',
    unit: 'units',
    lines: [
      { key: 'remaining', label: 'remaining', color: '#3d7bfd' },
      { key: 'stock', label: 'stock', color: '#9aa4b8' },
    ],
  },
  {
    id: 'chart-accepted',
    title: 'Units accepted per second',
    note: 'every gateway',
    unit: 'units/s',
    lines: [{ key: 'acceptedPerSecond', label: 'accepted', color: '#2e9e5b' }],
  },
  {
    id: 'chart-backlog',
    title: "Entries in flight and workers' lag",
    unit: 'entries',
    lines: [
      { key: 'inFlight', label: 'in flight', color: '#e67e22' },
      { key: 'lag', label: 'lag (not yet delivered)', color: '#c0392b' },
    ],
  },
  {
    id: 'chart-written',
    title: 'Orders written per second',
    note: 'every worker',
    unit: 'orders/s',
    lines: [{ key: 'writtenPerSecond', label: 'written', color: '#8e44ad' }],
  },
  {
    id: 'chart-door',
    title: 'Waiting room',
    note: 'a queued sale',
    unit: 'buyers',
    optional: true,
    lines: [
      { key: 'waiting', label: 'waiting', color: '#3d7bfd' },
      { key: 'admittedUnused', label: 'admitted, not bought yet', color: '#2e9e5b' },
      { key: 'front', label: 'frontier (places given a turn)', color: '#9aa4b8' },
      { key: 'abandoned', label: 'abandoned turns', color: '#c0392b' },
    ],
  },
];

// Refusal reasons as an operator says them; a code not listed is shown in lower case.
const REASONS = {
  SOLD_OUT: ['sold out', '#c0392b'],
  ALREADY_PURCHASED: ['duplicate', '#e67e22'],
  RATE_LIMITED: ['rate limited', '#8e44ad'],
  NOT_ADMITTED: ['not admitted', '#16a085'],
  SALE_PAUSED: ['paused', '#d4ac0d'],
  SALE_ENDED: ['ended', '#7f8c8d'],
  SALE_NOT_STARTED: ['not started', '#5d6d7e'],
  INSUFFICIENT_STOCK: ['too few left', '#a04000'],
};
const reasonLabel = (code) => (REASONS[code] ? REASONS[code][0] : code.toLowerCase().replaceAll('_', ' '));
const OTHER_COLORS = ['#34495e', '#b03a2e', '#1f618d', '#117864', '#7d3c98'];

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
        .map((code, i) => ({
          key: code,
          label: reasonLabel(code),
          color: REASONS[code] ? REASONS[code][1] : OTHER_COLORS[i % OTHER_COLORS.length],
        })),
  },
  {
    id: 'chart-latency',
    title: 'Purchase latency',
    note: 'this gateway process, every outcome',
    unit: 'ms',
    lines: [
      { key: 'p50Ms', label: 'p50', color: '#3d7bfd' },
      { key: 'p99Ms', label: 'p99', color: '#c0392b' },
    ],
  },
];
