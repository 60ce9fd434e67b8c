// The sale's ledger as a person reads it, and the one-line verdict: a classic script beside
// dashboard.js (which calls renderLedger with every push of the sale's view), using its el, $ and count.
/* global el, $, count */
/* exported renderLedger, resetVerdict */
'use strict';

function ago(iso) {
  const seconds = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 1000));
  if (seconds < 90) return `${seconds} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

// Amounts are in cents of the payment provider's currency.
const money = (cents) => (cents / 100).toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });

// The ledger as a person reads it: what each row is in words, orders and units side by side. Each cell
// names the member of GET .../stats it shows (data-field) and holds its raw value (data-value).
function renderLedger(stats) {
  const cell = (field, value, text) => {
    const td = el('td', text === undefined ? count(value) : text, 'number');
    if (field) {
      td.dataset.field = field;
      td.dataset.value = value === null || value === undefined ? '' : String(value);
    }
    return td;
  };
  const row = (label, orders, units, hint) => {
    const tr = el('tr');
    const th = el('th', label);
    if (hint) th.append(el('span', ` ${hint}`, 'muted'));
    tr.append(th, orders || el('td'), units || el('td'));
    return tr;
  };
  const status = (name, label, hint) =>
    row(
      label,
      cell(`ordersByStatus.${name}.orders`, stats.ordersByStatus[name].orders),
      cell(`ordersByStatus.${name}.units`, stats.ordersByStatus[name].units),
      hint,
    );
  const audit = stats.audit;
  const rows = [
    row('Stock', null, cell('stock', stats.stock)),
    row(
      'Remaining',
      null,
      cell('remaining', stats.remaining, stats.remaining === null ? 'no state in Redis' : undefined),
      'in Redis, still for sale',
    ),
    row('In flight', null, cell('inFlight', stats.inFlight), 'accepted, not yet written'),
    row('Live orders', cell('ordersInDb', stats.ordersInDb), cell('unitsInDb', stats.unitsInDb), 'awaiting payment + paid'),
    status('created', 'Awaiting payment'),
    status('paid', 'Paid'),
    status('cancelled', 'Cancelled'),
    status('expired', 'Expired', 'not paid in time'),
    row('Returned to sale', null, cell('unitsReturned', stats.unitsReturned), 'from cancelled and expired orders'),
    row('On their way back', null, cell('unitsAwaitingReturn', stats.unitsAwaitingReturn), 'to be returned'),
    row(
      'Refunds due',
      cell('refundsDue.count', stats.refundsDue.count),
      cell('refundsDue.amountCents', stats.refundsDue.amountCents, money(stats.refundsDue.amountCents)),
      'payments · amount',
    ),
    row('Dead letters', cell('deadLettered', stats.deadLettered), null, 'entries set aside'),
    row(
      'Lost with Redis data',
      cell('lost.reservations', stats.lost.reservations),
      cell('lost.units', stats.lost.units),
      'reservations · units',
    ),
    row(
      'Last audit',
      cell('audit.drift', audit ? audit.drift : null, audit ? `drift ${audit.drift}` : 'not audited yet'),
      cell('audit.checkedAt', audit ? audit.checkedAt : null, audit ? ago(audit.checkedAt) : '–'),
    ),
  ];
  $('ledger').tBodies[0].replaceChildren(...rows);
  renderVerdict(stats);
}

// Reads in a row that found the ledger out of balance. One read is not a snapshot of both stores (units
// returned between its MySQL and its Redis reads count twice): the line turns red at the second.
let unbalancedReads = 0;

// A new page of a sale starts with no read behind it.
function resetVerdict() {
  unbalancedReads = 0;
  const verdict = $('verdict');
  verdict.className = 'verdict judging';
  verdict.dataset.balanced = '';
  verdict.textContent = 'judging: no figures yet';
}

// One line: the ledger balances, or what does not.
function renderVerdict(stats) {
  const verdict = $('verdict');
  const problems = [];
  if (stats.remaining === null) problems.push('Redis holds no state for this sale');
  else if (!stats.consistent) {
    const counted = stats.remaining + stats.unitsInDb + stats.unitsAwaitingReturn;
    problems.push(
      stats.unitsInDb > stats.stock
        ? `${count(stats.unitsInDb)} units in live orders, more than the stock of ${count(stats.stock)}`
        : `remaining ${count(stats.remaining)} + live orders ${count(stats.unitsInDb)} + on their way back ${count(stats.unitsAwaitingReturn)} = ${count(counted)} units, stock ${count(stats.stock)} (${stats.inFlight} in flight)`,
    );
  }
  if (stats.audit && stats.audit.drift !== 0) problems.push(`the last audit found a drift of ${stats.audit.drift} units`);
  unbalancedReads = problems.length === 0 ? 0 : unbalancedReads + 1;
  if (unbalancedReads === 1) {
    // Not judged on one read: said so, with what is moving, rather than an empty line.
    verdict.className = 'verdict judging';
    verdict.dataset.balanced = '';
    verdict.textContent = `judging: ${count(stats.inFlight)} in flight`;
    return;
  }
  const balanced = problems.length === 0;
  verdict.className = `verdict ${balanced ? 'ok' : 'bad'}`;
  verdict.dataset.balanced = String(balanced);
  verdict.textContent = balanced
    ? stats.inFlight === 0
      ? 'Ledger balanced: remaining + units in live orders + units on their way back = stock.'
      : `Ledger balanced so far: nothing oversold, ${count(stats.inFlight)} entries in flight.`
    : `Ledger does not balance: ${problems.join('; ')}.`;
}
