// The operator's dashboard: plain browser JavaScript, no build step, no library.
// Every value from the server reaches the page through textContent (never innerHTML), so a sale named
// `<img src=x onerror=...>` is shown as those characters. The admin token is sent once, in the body of
// the sign-in; the page keeps only the session's CSRF token in memory (never in storage or a URL), and
// sends it with every change.
/* global SALE_CHARTS, PROCESS_CHARTS, renderLedger, resetVerdict, renderDoor, bindDoorControls */
/* exported count */
'use strict';

const $ = (id) => document.getElementById(id);
let csrfToken = null;
let stream = null;
let shownSale = null;
// The history the stream opened with, extended by every push: { stepMs, windowMs, sale, process }, each
// series set { t: [epoch ms], series: { name: [value or null] } } (sale-history.ts on the gateway).
let history = null;
// The shown sale's last view: its row in the list shows the same read as the header and the ledger,
// whichever of the two topics' pushes came last.
let saleSnapshot = null;

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

const statusInWords = (status) => status.replaceAll('_', ' ');

function selectedSaleId() {
  const match = /^#sale=([1-9][0-9]{0,9})$/.exec(location.hash);
  return match ? Number(match[1]) : null;
}

function showSignIn(message) {
  closeStream();
  csrfToken = null;
  $('dashboard').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in').hidden = false;
  $('sign-in-error').textContent = message || '';
  $('connection').textContent = '';
  $('token').focus();
}

function showDashboard(session) {
  csrfToken = session.csrfToken;
  $('sign-in').hidden = true;
  $('dashboard').hidden = false;
  $('sign-out').hidden = false;
  openStream();
}

async function checkSession(message) {
  let res;
  try {
    res = await fetch('/admin/session', { credentials: 'same-origin' });
  } catch {
    // The gateway cannot be reached: not a sign-out. Asked again shortly.
    $('connection').textContent = 'gateway unreachable, retrying…';
    setTimeout(() => void checkSession(message), 2000);
    return;
  }
  if (res.ok) showDashboard(await res.json());
  else if (res.status === 401) showSignIn(message);
  else setTimeout(() => void checkSession(message), 2000);
}

// One stream per page: the overview and the sale shown. EventSource reconnects a dropped connection by
// itself; one the server refused (the session ended) closes, and the page asks whether it is signed in.
function openStream() {
  closeStream();
  const saleId = selectedSaleId();
  shownSale = saleId;
  history = null;
  saleSnapshot = null;
  resetVerdict();
  renderDoor(null);
  // Another sale may draw other charts (a queued sale's waiting room): none of the last one's stays.
  $('sale-charts').replaceChildren();
  $('sale-view').hidden = saleId === null;
  stream = new EventSource(saleId === null ? '/admin/live' : `/admin/live?sale=${saleId}`);
  stream.addEventListener('open', () => ($('connection').textContent = 'live'));
  stream.addEventListener('history', (event) => {
    history = JSON.parse(event.data);
    drawCharts();
  });
  stream.addEventListener('overview', (event) => renderOverview(JSON.parse(event.data)));
  stream.addEventListener('sale', (event) => renderSale(JSON.parse(event.data)));
  stream.addEventListener('error', () => {
    $('connection').textContent = 'reconnecting…';
    if (stream && stream.readyState === EventSource.CLOSED) {
      closeStream();
      // Refused: the session ended (the check shows the sign-in), or too many streams are open (the check
      // finds the session open, and the page tries again a little later).
      setTimeout(() => void checkSession('Your session has ended: sign in again.'), 1000);
    }
  });
}

function closeStream() {
  if (stream) stream.close();
  stream = null;
}

function figures(list, entries) {
  const nodes = [];
  for (const [name, value] of entries) nodes.push(el('dt', name), el('dd', value === null || value === undefined ? '–' : value));
  list.replaceChildren(...nodes);
}

function renderOverview(view) {
  if (view.error) {
    $('connection').textContent = `stale: ${view.error}`;
    return;
  }
  $('connection').textContent = `live · ${new Date(view.at).toLocaleTimeString()}`;
  const rows = view.sales.map((sale) => {
    const row = el('tr');
    row.dataset.saleId = String(sale.id);
    if (sale.id === shownSale) row.className = 'selected';
    const status = el('td');
    status.append(el('span', statusInWords(sale.status), `badge ${sale.status}`));
    const remaining = el('td', undefined, 'remaining');
    row.append(el('td', sale.id), el('td', sale.name), status, remaining, el('td', new Date(sale.endsAt).toLocaleString()));
    showRemaining(remaining, saleSnapshot && saleSnapshot.id === sale.id ? saleSnapshot : sale);
    row.addEventListener('click', () => (location.hash = `sale=${sale.id}`));
    return row;
  });
  $('sales').tBodies[0].replaceChildren(...rows);
  const queues = Object.entries(view.queues).map(([name, counts]) => {
    const row = el('tr');
    row.append(el('td', name), ...['waiting', 'active', 'delayed', 'completed', 'failed'].map((state) => el('td', counts[state] ?? 0)));
    return row;
  });
  $('queues').tBodies[0].replaceChildren(...queues);
  const purchases = view.purchases;
  const rates = purchases ? Object.entries(purchases).filter(([name]) => !name.endsWith('Ms')) : [];
  figures($('purchases'), [
    ['accepted /s', purchases ? (purchases.reserved ?? 0) : null],
    ['refused /s', purchases ? rates.filter(([name]) => name !== 'reserved').reduce((sum, [, rate]) => sum + (rate ?? 0), 0) : null],
    [
      'latency p50 / p99',
      purchases && purchases.p50Ms !== null && purchases.p50Ms !== undefined ? `${purchases.p50Ms} ms / ${purchases.p99Ms} ms` : null,
    ],
  ]);
  if (history) {
    appendPoints(history, 'process', view.processHistory);
    drawCharts();
  }
}

function showRemaining(cell, sale) {
  cell.textContent = `${sale.remaining} / ${sale.stock}`;
  cell.dataset.remaining = String(sale.remaining);
}

function renderSale(view) {
  if (view.error) {
    $('view-error').textContent = `Figures not updated at ${formatTime(Date.now())}: ${view.error}. They are read again every moment.`;
    return;
  }
  $('view-error').textContent = '';
  const { sale, stats, deadLetters, reconciliation } = view;
  if (sale.id !== shownSale) return;
  $('sale-name').textContent = `#${sale.id} ${sale.name}`;
  $('sale-status').textContent =
    statusInWords(sale.status) + (sale.pausedByOperatorAt ? ' (operator)' : sale.reconciling ? ' (reconciling)' : '');
  $('sale-status').className = `badge ${sale.status}`;
  $('sale-terms').textContent =
    `${new Date(sale.startsAt).toLocaleString()} → ${new Date(sale.endsAt).toLocaleString()} · up to ${sale.perUserLimit} per buyer` +
    ` · at most ${sale.maxOrdersPerBuyer} orders per buyer, ${sale.rebuyCooldownSeconds} s wait after a second cancel or expiry`;
  saleSnapshot = sale;
  const row = document.querySelector(`#sales tr[data-sale-id="${sale.id}"] td.remaining`);
  if (row) showRemaining(row, sale);
  $('remaining-text').textContent = `${sale.remaining} of ${sale.stock} left`;
  $('remaining-text').dataset.remaining = String(sale.remaining);
  $('figures-at').textContent = `Figures as of ${formatTime(view.at)}, one read for the header, the list and the ledger.`;
  $('remaining-bar').style.width = `${sale.stock > 0 ? Math.max(0, (100 * sale.remaining) / sale.stock) : 0}%`;
  if (history) {
    appendPoints(history, 'sale', view.history);
    drawCharts();
  }
  renderLedger(stats);
  renderDoor(view.door);
  const reasons = Object.entries(deadLetters.byReason).map(([reason, count]) => [
    `dead letters: ${reason.toLowerCase().replaceAll('_', ' ')}`,
    count,
  ]);
  figures($('sale-figures'), [
    [
      'reconciliation',
      reconciliation
        ? `${reconciliation.state} (${reconciliation.reason})${reconciliation.finishedAt ? `, finished ${formatTime(reconciliation.finishedAt)}` : ''}`
        : 'none asked',
    ],
    ...(reasons.length ? reasons : [['dead letters (last 1,000)', 'none']]),
  ]);
  $('pause').disabled = sale.pausedByOperatorAt !== null || sale.status === 'ended';
  $('resume').disabled = sale.pausedByOperatorAt === null;
  $('close').disabled = sale.status === 'ended';
  $('add-stock').disabled = sale.status === 'ended';
}

// Adds pushed points newer than those held, and lets go of those older than the window.
function appendPoints(into, which, pushed) {
  if (!pushed || !pushed.t.length) return;
  if (!into[which]) into[which] = { t: [], series: {} };
  const held = into[which];
  const last = held.t.length ? held.t[held.t.length - 1] : -Infinity;
  pushed.t.forEach((t, i) => {
    if (t <= last) return;
    for (const name of Object.keys(pushed.series)) if (!held.series[name]) held.series[name] = held.t.map(() => null);
    held.t.push(t);
    for (const [name, values] of Object.entries(held.series)) values.push(pushed.series[name] ? pushed.series[name][i] : null);
  });
  const from = held.t[held.t.length - 1] - into.windowMs;
  const drop = held.t.findIndex((t) => t >= from);
  if (drop > 0) {
    held.t.splice(0, drop);
    for (const values of Object.values(held.series)) values.splice(0, drop);
  }
}

// A chart's figure in `container`, made the first time it is drawn.
function chartFigure(container, chart) {
  let figure = document.getElementById(chart.id);
  if (figure) return figure;
  figure = el('figure', undefined, 'chart');
  figure.id = chart.id;
  const caption = el('figcaption', chart.title);
  if (chart.note) caption.append(' ', el('span', `· ${chart.note}`, 'muted'));
  const drawing = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  drawing.setAttribute('role', 'img');
  drawing.setAttribute('aria-label', chart.title);
  figure.append(caption, drawing, el('div', undefined, 'legend'));
  container.append(figure);
  return figure;
}

function drawCharts() {
  if (!history) return;
  const { lineChart } = window.FlashsaleCharts;
  for (const chart of PROCESS_CHARTS) {
    const lines = typeof chart.lines === 'function' ? chart.lines(history.process) : chart.lines;
    lineChart(chartFigure($('process-charts'), chart), history.process, lines, chart.unit);
  }
  if (shownSale === null) return;
  const held = history.sale ? history.sale.series : {};
  for (const chart of SALE_CHARTS) {
    if (chart.optional && !chart.lines.some((line) => line.key in held)) continue;
    lineChart(chartFigure($('sale-charts'), chart), history.sale, chart.lines, chart.unit);
  }
  const minutes = Math.round(history.windowMs / 60_000);
  $('history-note').textContent =
    history.sale && history.sale.t.length
      ? `Charts since ${formatTime(history.sale.t[0])}, last point ${formatTime(history.sale.t[history.sale.t.length - 1])} (a point every ${history.stepMs / 1000} s, kept ${minutes} min by the gateway process serving this page).`
      : `No history of this sale yet: the gateway keeps the last ${minutes} min of each live sale.`;
}

const count = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString());

function formatTime(value) {
  return new Date(value).toLocaleTimeString([], { hour12: false });
}

async function control(path, body) {
  const saleId = shownSale;
  const headers = { 'X-CSRF-Token': csrfToken };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  $('control-result').textContent = '…';
  const res = await fetch(`/api/admin/sales/${saleId}/${path}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await res.json().catch(() => ({}));
  if (res.status === 401) return showSignIn('Your session has ended: sign in again.');
  const done = answer.admission
    ? `${answer.admission.admitPerSecond} admitted/s${answer.admission.paused ? ', paused' : ''}`
    : (answer.status ?? 'rebuilt');
  $('control-result').textContent = res.ok ? `${path}: done (${done})` : `${path}: ${answer.code} — ${answer.detail}`;
}

document.addEventListener('DOMContentLoaded', () => {
  $('sign-in-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const res = await fetch('/admin/session', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: $('token').value }),
    });
    $('token').value = '';
    if (res.ok) showDashboard(await res.json());
    else $('sign-in-error').textContent = res.status === 401 ? 'That admin token is not valid.' : `Sign-in failed (${res.status}).`;
  });
  $('sign-out').addEventListener('click', async () => {
    await fetch('/admin/session', { method: 'DELETE', credentials: 'same-origin', headers: { 'X-CSRF-Token': csrfToken } });
    showSignIn('Signed out.');
  });
  $('pause').addEventListener('click', () => void control('pause'));
  $('resume').addEventListener('click', () => void control('resume'));
  $('close').addEventListener('click', () => {
    if (confirm(`Close sale #${shownSale} now? Buyers are refused from this moment; this cannot be undone.`)) void control('close');
  });
  bindDoorControls(control);
  $('add-stock').addEventListener('click', () => void control('stock', { add: Number($('stock-add').value) }));
  $('reconcile').addEventListener('click', () => {
    if (confirm(`Reconcile sale #${shownSale}? It is paused until its stream has drained and its Redis state is rebuilt from MySQL.`))
      void control('reconcile');
  });
  window.addEventListener('hashchange', () => {
    if (csrfToken) openStream();
  });
  void checkSession();
});
