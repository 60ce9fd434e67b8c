// Time-series line charts as inline SVG: axes with ticks and units, a time scale, a legend. Plain browser
// JavaScript, no library: the page's Content-Security-Policy allows only its own scripts and styles, and
// every text here goes in through textContent, every number through setAttribute.
'use strict';

(() => {
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const WIDTH = 460;
  const HEIGHT = 178;
  const MARGIN = { top: 18, right: 12, bottom: 24, left: 46 };
  /** A tick label's character, wide (digits and colons of the axis's font size, dashboard.css): used to keep labels inside. */
  const X_LABEL_CHAR_WIDTH = 7;
  /** The shortest time span an axis shows: a chart drawn from its first points still has a time scale. */
  const MIN_SPAN_MS = 10_000;
  const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200].map((s) => s * 1000);

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** A round step giving about `count` ticks up to `max` (1, 2 or 5 times a power of ten). */
  function niceStep(max, count) {
    const raw = max / count;
    const power = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
    return step;
  }

  function formatNumber(value) {
    if (Math.abs(value) >= 10_000) return `${Math.round(value / 1000)}k`;
    if (Math.abs(value) >= 1000) return `${(value / 1000).toFixed(1).replace(/\.0$/, '')}k`;
    return String(Math.round(value * 100) / 100);
  }

  function formatTime(ms, withSeconds) {
    return new Date(ms).toLocaleTimeString([], {
      hour: '2-digit',
      minute: '2-digit',
      second: withSeconds ? '2-digit' : undefined,
      hour12: false,
    });
  }

  /**
   * Draws `lines` of `points` ({ t: [epoch ms], series: { name: [value or null] } }) into the chart
   * element `figure` (a figure holding an svg and a legend). `lines`: [{ key, label, color }]. `unit`
   * labels the y axis. The svg carries data-points (times held) and each line data-series, data-first,
   * data-last and data-max, so a test reads what is drawn.
   */
  function lineChart(figure, points, lines, unit) {
    const chart = figure.querySelector('svg');
    const legend = figure.querySelector('.legend');
    const t = points ? points.t : [];
    chart.replaceChildren();
    chart.setAttribute('viewBox', `0 0 ${WIDTH} ${HEIGHT}`);
    chart.dataset.points = String(t.length);
    const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
    const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;

    const end = t.length ? t[t.length - 1] : Date.now();
    const start = Math.min(t.length ? t[0] : end, end - MIN_SPAN_MS);
    let max = 0;
    for (const line of lines) for (const value of (points && points.series[line.key]) || []) if (value !== null && value > max) max = value;
    const yStep = niceStep(Math.max(max, 1), 4);
    const yMax = Math.max(yStep, Math.ceil(max / yStep) * yStep);
    const x = (ms) => MARGIN.left + ((ms - start) / (end - start)) * plotWidth;
    const y = (value) => MARGIN.top + plotHeight - (value / yMax) * plotHeight;

    const axes = svg('g', { class: 'axis' });
    for (let value = 0; value <= yMax + yStep / 2; value += yStep) {
      axes.append(
        svg('line', { x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(value), y2: y(value), class: value === 0 ? 'baseline' : 'grid' }),
      );
      axes.append(svg('text', { x: MARGIN.left - 5, y: y(value) + 3, 'text-anchor': 'end', class: 'tick y-tick' }, formatNumber(value)));
    }
    axes.append(svg('text', { x: 2, y: 10, class: 'unit' }, unit));
    const timeStep = TIME_STEPS.find((s) => (end - start) / s <= 6) || TIME_STEPS[TIME_STEPS.length - 1];
    for (let ms = Math.ceil(start / timeStep) * timeStep; ms <= end; ms += timeStep) {
      axes.append(svg('line', { x1: x(ms), x2: x(ms), y1: MARGIN.top + plotHeight, y2: MARGIN.top + plotHeight + 4, class: 'baseline' }));
      // A label centred on a tick near the right edge would run past it ("02:27:3"): it ends at the edge instead.
      const label = formatTime(ms, timeStep < 60_000);
      const atEdge = x(ms) + (label.length * X_LABEL_CHAR_WIDTH) / 2 > WIDTH;
      axes.append(
        svg(
          'text',
          { x: atEdge ? WIDTH - 1 : x(ms), y: HEIGHT - 6, 'text-anchor': atEdge ? 'end' : 'middle', class: 'tick x-tick' },
          label,
        ),
      );
    }
    axes.append(svg('line', { x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top, y2: MARGIN.top + plotHeight, class: 'baseline' }));
    chart.append(axes);

    const swatches = [];
    for (const line of lines) {
      const values = (points && points.series[line.key]) || [];
      let path = '';
      let pen = false;
      let first = null;
      let last = null;
      let top = null;
      values.forEach((value, i) => {
        if (value === null) return void (pen = false);
        path += `${pen ? 'L' : 'M'}${x(t[i]).toFixed(1)},${y(value).toFixed(1)}`;
        pen = true;
        if (first === null) first = value;
        last = value;
        top = top === null ? value : Math.max(top, value);
      });
      if (path)
        chart.append(
          svg('path', {
            d: path,
            stroke: line.color,
            fill: 'none',
            'stroke-width': 2,
            'data-series': line.key,
            'data-first': first,
            'data-last': last,
            'data-max': top,
          }),
        );
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = line.color;
      const item = document.createElement('span');
      item.append(swatch, document.createTextNode(`${line.label}${last === null ? '' : ` ${formatNumber(last)}`}`));
      swatches.push(item);
    }
    if (!t.length)
      chart.append(
        svg(
          'text',
          { x: MARGIN.left + plotWidth / 2, y: MARGIN.top + plotHeight / 2, 'text-anchor': 'middle', class: 'empty' },
          'no points yet',
        ),
      );
    legend.replaceChildren(...swatches);
  }

  window.FlashsaleCharts = { lineChart };
})();
