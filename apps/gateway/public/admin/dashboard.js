// The operator's dashboard: plain browser JavaScript, no build step, no library.
// Every value from the server reaches the page through textContent (never innerHTML), so a sale named
// `<img src=x onerror=...>` is shown as those characters. The admin token is sent once, in the body of
// the sign-in; the page keeps only the session's CSRF token in memory (never in storage or a URL), and
// sends it with every change.
'use strict';

const $ = (id) => document.getElementById(id);
let csrfToken = null;
let stream = null;
let shownSale = null;
let remainingHistory = [];

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

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
  remainingHistory = [];
  $('sale-view').hidden = saleId === null;
  stream = new EventSource(saleId === null ? '/admin/live' : `/admin/live?sale=${saleId}`);
  stream.addEventListener('open', () => ($('connection').textContent = 'live'));
  stream.addEventListener('overview', (event) => renderOverview(JSON.parse(event.data)));
  stream.addEventListener('sale', (event) => renderSale(JSON.parse(event.data)));
  stream.addEventListener('error', () => {
    $('connection').textContent = 'reconnecting…';
    if (stream && stream.readyState === EventSource.CLOSED) {
      closeStream();
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

// The ledger as the stats endpoint answers it, whatever members it has: nested objects flattened.
function flatten(value, prefix, into) {
  for (const [key, member] of Object.entries(value)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (member !== null && typeof member === 'object' && !Array.isArray(member)) flatten(member, name, into);
    else into.push([name, Array.isArray(member) ? JSON.stringify(member) : member]);
  }
  return into;
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
    status.append(el('span', sale.status, `badge ${sale.status}`));
    row.append(el('td', sale.id), el('td', sale.name), status, el('td', `${sale.remaining} / ${sale.stock}`), el('td', new Date(sale.endsAt).toLocaleString()));
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
  const outcomes = purchases ? Object.entries(purchases.perSecond).map(([outcome, rate]) => [`${outcome} /s`, rate]) : [];
  figures($('purchases'), [
    ...(outcomes.length ? outcomes : [['purchases /s', purchases ? 0 : null]]),
    ['latency p50 (ms)', purchases && purchases.p50Ms],
    ['latency p99 (ms)', purchases && purchases.p99Ms],
  ]);
}

function renderSale(view) {
  if (view.error) {
    $('control-result').textContent = `The view could not be read: ${view.error}`;
    return;
  }
  const { sale, stats, backlog, deadLetters, reconciliation } = view;
  if (sale.id !== shownSale) return;
  $('sale-name').textContent = `#${sale.id} ${sale.name}`;
  $('sale-status').textContent = sale.status + (sale.pausedByOperatorAt ? ' (operator)' : sale.reconciling ? ' (reconciling)' : '');
  $('sale-status').className = `badge ${sale.status}`;
  $('sale-terms').textContent = `${new Date(sale.startsAt).toLocaleString()} → ${new Date(sale.endsAt).toLocaleString()} · up to ${sale.perUserLimit} per buyer`;
  $('remaining-text').textContent = `${sale.remaining} of ${sale.stock} left`;
  $('remaining-text').dataset.remaining = String(sale.remaining);
  $('remaining-bar').style.width = `${sale.stock > 0 ? Math.max(0, (100 * sale.remaining) / sale.stock) : 0}%`;
  remainingHistory.push(sale.remaining);
  if (remainingHistory.length > 120) remainingHistory.shift();
  drawChart(sale.stock);
  figures($('sale-figures'), [
    ['units accepted /s (every gateway)', view.unitsAcceptedPerSecond],
    ['entries in flight', backlog.lag + backlog.pending],
    ['drain lag (not yet delivered)', backlog.lag],
    ['pending (delivered, not written)', backlog.pending],
    ['reconciliation', reconciliation ? `${reconciliation.state} (${reconciliation.reason})${reconciliation.finishedAt ? ` · ${new Date(reconciliation.finishedAt).toLocaleTimeString()}` : ''}` : 'none'],
    ['audit drift', stats.audit ? stats.audit.drift : 'not audited yet'],
    ['lost reservations', stats.lost ? stats.lost.reservations : null],
  ]);
  figures($('stats'), flatten(stats, '', []));
  const reasons = Object.entries(deadLetters.byReason);
  figures($('dead-letters'), reasons.length ? reasons : [['none', 0]]);
  $('pause').disabled = sale.pausedByOperatorAt !== null || sale.status === 'ended';
  $('resume').disabled = sale.pausedByOperatorAt === null;
  $('close').disabled = sale.status === 'ended';
  $('add-stock').disabled = sale.status === 'ended';
}

function drawChart(stock) {
  const canvas = $('remaining-chart');
  const context = canvas.getContext('2d');
  context.clearRect(0, 0, canvas.width, canvas.height);
  if (remainingHistory.length < 2 || stock <= 0) return;
  context.strokeStyle = '#3d7bfd';
  context.lineWidth = 2;
  context.beginPath();
  remainingHistory.forEach((remaining, i) => {
    const x = (i / 119) * canvas.width;
    const y = canvas.height - 4 - (Math.max(0, remaining) / stock) * (canvas.height - 8);
    if (i === 0) context.moveTo(x, y);
    else context.lineTo(x, y);
  });
  context.stroke();
}

async function control(path, body) {
  const saleId = shownSale;
  const headers = { 'X-CSRF-Token': csrfToken };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  $('control-result').textContent = '…';
  const res = await fetch(`/api/admin/sales/${saleId}/${path}`, { method: 'POST', credentials: 'same-origin', headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await res.json().catch(() => ({}));
  if (res.status === 401) return showSignIn('Your session has ended: sign in again.');
  $('control-result').textContent = res.ok ? `${path}: done (${answer.status ?? 'rebuilt'})` : `${path}: ${answer.code} — ${answer.detail}`;
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
  $('add-stock').addEventListener('click', () => void control('stock', { add: Number($('stock-add').value) }));
  $('reconcile').addEventListener('click', () => {
    if (confirm(`Reconcile sale #${shownSale}? It is paused until its stream has drained and its Redis state is rebuilt from MySQL.`)) void control('reconcile');
  });
  window.addEventListener('hashchange', () => {
    if (csrfToken) openStream();
  });
  void checkSession();
});
