// The buyer's page: one sale, from the countdown to the receipt. Plain browser JavaScript, no build
// step, no library; the talk with the gateway is buyer-api.js. Every value from the server reaches the
// page through textContent, never innerHTML. Kept in the browser's storage, per sale and buyer: the
// ticket (a reload keeps the place) and the reservation (a reload keeps following the order).
import { FINAL_QUEUE_STATES, altchaPayload, createBuyerApi, waitInLine } from './buyer-api.js';

const $ = (id) => document.getElementById(id);
const settings = document.body.dataset;
const saleId = /^\/s\/([1-9][0-9]{0,9})\/?$/.exec(location.pathname)?.[1];
const PARTS = ['countdown', 'figures', 'progress', 'buy-form', 'pay', 'pay-link', 'receipt', 'sign-in-form', 'sign-in-link'];
const TOKEN_KEY = 'flashsale.buyerToken';

class SignedOut extends Error {}

// ---- the buyer's identity: the shop's token, handed over in the address's fragment ----

function payloadOf(token) {
  try {
    const part = token.split('.')[1].replaceAll('-', '+').replaceAll('_', '/');
    const payload = JSON.parse(atob(part));
    return typeof payload.sub === 'string' && typeof payload.exp === 'number' ? payload : null;
  } catch {
    return null;
  }
}

/** The token the shop handed over (`#token=` in the address, taken out at once), or the one kept. */
function takeToken() {
  const handed = /(?:^#|&)token=([A-Za-z0-9_.-]+)/.exec(location.hash)?.[1];
  if (handed) {
    localStorage.setItem(TOKEN_KEY, handed);
    // Out of the address bar, the history and any bookmark.
    history.replaceState(null, '', location.pathname + location.search);
  }
  const token = localStorage.getItem(TOKEN_KEY);
  const payload = token && payloadOf(token);
  // A minute's margin: a token that runs out mid-request answers 401 anyway.
  if (!payload || payload.exp * 1000 < Date.now() + 60_000) {
    localStorage.removeItem(TOKEN_KEY);
    return null;
  }
  return { token, buyer: payload.sub };
}

// ---- what the page shows ----

let countdownTimer = null;
let lastAnnounced = '';

function announce(text) {
  if (text === lastAnnounced) return;
  lastAnnounced = text;
  $('announce').textContent = text;
}

/** One state of the page: its name (data-state, for styles and tests), a title and words; every optional part hidden. */
function show(state, title, text = '', { say = true, focus = false } = {}) {
  clearInterval(countdownTimer);
  for (const part of PARTS) $(part).hidden = true;
  const section = $('state');
  const changed = section.dataset.state !== state;
  section.dataset.state = state;
  $('state-title').textContent = title;
  $('state-text').textContent = text;
  if (say) announce(text ? `${title} ${text}` : title);
  if (focus && changed) $('state-title').focus();
}

let clockOffset = 0;
const serverNow = () => Date.now() + clockOffset;
function learnClock(answer) {
  if (answer.serverTime !== null) {
    const offset = answer.serverTime - Date.now();
    // The Date header has whole seconds: move only when off by more than one.
    if (Math.abs(offset - clockOffset) > 1000) clockOffset = offset;
  }
}

function inWords(seconds) {
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Counts down to `at` (server time) in the countdown line, as `label` + the time left. */
function countdown(at, label) {
  const line = $('countdown');
  const tick = () => {
    const left = Math.max(0, Math.ceil((at - serverNow()) / 1000));
    line.textContent = `${label} ${inWords(left)}`;
  };
  tick();
  line.hidden = false;
  clearInterval(countdownTimer);
  countdownTimer = setInterval(tick, 1000);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sleepUntil = (at) => sleep(Math.max(0, at - serverNow()));

/** Resolves once the form is submitted (or the button pressed), by mouse, keyboard or touch alike. */
function submitted(element) {
  return new Promise((resolve) => {
    const event = element.tagName === 'FORM' ? 'submit' : 'click';
    element.addEventListener(
      event,
      (e) => {
        e.preventDefault();
        resolve();
      },
      { once: true },
    );
  });
}

// ---- talking to the gateway, through a lost network ----

let backoffMs = 1000;
/** An answer came: the network is there (the notice goes), and the server's clock is learnt. */
function answered(answer) {
  if (!$('offline').hidden) {
    $('offline').hidden = true;
    announce('Back online. Your place is kept.');
  }
  backoffMs = 1000;
  learnClock(answer);
}

/** Runs one request; while the network is away says so, and tries again when it is back. 401: signed out. */
async function ask(request) {
  for (;;) {
    let answer;
    try {
      answer = await request();
    } catch {
      $('offline').hidden = false;
      announce('You are offline. Your place is kept.');
      await Promise.race([sleep(backoffMs), new Promise((resolve) => window.addEventListener('online', resolve, { once: true }))]);
      backoffMs = Math.min(backoffMs * 2, 15_000);
      continue;
    }
    answered(answer);
    if (answer.status === 401) throw new SignedOut();
    return answer;
  }
}

/** Asks until the answer is not 503 or 429, telling the buyer the service is busy and when it tries again. */
async function askThroughBusy(request, busyTitle) {
  for (;;) {
    const answer = await ask(request);
    if (answer.status !== 503 && answer.status !== 429) return answer;
    const seconds = Math.max(1, answer.retryAfter ?? 2);
    const paused = answer.body?.code === 'SALE_PAUSED';
    show(
      'busy',
      busyTitle,
      paused
        ? 'The sale is paused for a moment. Nothing is lost: this page tries again by itself.'
        : 'The shop is very busy. Nothing is lost: this page tries again by itself.',
    );
    countdown(serverNow() + seconds * 1000, 'Trying again in');
    await sleep(seconds * 1000);
  }
}

// ---- the journey ----

let api;
let saved;
let sale;

/** What is kept for this buyer and sale across reloads and tabs. */
function storageFor(buyer) {
  const key = (name) => `flashsale.sale.${saleId}.${buyer}.${name}`;
  const item = (name) => ({ get: () => localStorage.getItem(key(name)), set: (value) => localStorage.setItem(key(name), String(value)) });
  return { ticket: sharedItem(key('ticket')), reservation: item('reservation'), firstAhead: item('firstAhead') };
}

/**
 * A value every tab reads the same, for the ticket: kept in IndexedDB, whose transactions the browser
 * orders across tabs. localStorage is copied into each tab and another tab's write reaches the copy a
 * moment later: a tab taking the join lock right after another joined could read no ticket and join
 * again. `get` is this tab's copy (mirrored in localStorage); `load` reads what the tabs agreed on; `set`
 * writes both and resolves once IndexedDB has it. Without IndexedDB (a browser that refuses it), the
 * copy in localStorage is all there is.
 */
function sharedItem(key) {
  let copy = localStorage.getItem(key);
  return {
    get: () => copy,
    async load() {
      // Nothing in IndexedDB: a ticket kept before it was used, or no ticket at all.
      const kept = await inKept('readonly', (store) => store.get(key)).catch(() => undefined);
      copy = kept ?? localStorage.getItem(key);
      return copy;
    },
    set(value) {
      copy = String(value);
      localStorage.setItem(key, copy);
      return inKept('readwrite', (store) => store.put(copy, key)).catch(() => undefined);
    },
  };
}

let keptStore;
/** Runs one request in a transaction of the page's IndexedDB store; resolves with its result once committed. */
async function inKept(mode, step) {
  keptStore ??= new Promise((resolve, reject) => {
    const opening = indexedDB.open('flashsale', 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore('kept');
    opening.onsuccess = () => resolve(opening.result);
    opening.onerror = () => reject(opening.error);
  });
  const transaction = (await keptStore).transaction('kept', mode);
  const request = step(transaction.objectStore('kept'));
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve(request.result);
    transaction.onerror = transaction.onabort = () => reject(transaction.error);
  });
}

function showSale() {
  document.title = sale.name;
  $('sale-name').textContent = sale.name;
  const starts = new Date(sale.startsAt).toLocaleString();
  $('sale-terms').textContent =
    `${sale.perUserLimit === 1 ? 'One unit' : `Up to ${sale.perUserLimit} units`} per buyer · from ${starts} to ${new Date(sale.endsAt).toLocaleString()}`;
  $('stock').textContent = sale.remaining === undefined ? '' : `${sale.remaining} of ${sale.stock} left`;
}

async function refreshSale() {
  const answer = await askThroughBusy(() => api.sale(), 'Loading the sale');
  if (answer.status === 404) {
    show('refused', 'No such sale', 'There is no sale at this address.');
    return false;
  }
  sale = answer.body;
  showSale();
  return true;
}

function showSignIn(message) {
  show('sign_in', 'Sign in to take part', message);
  if (settings.signInUrl) {
    const link = $('sign-in-link');
    link.href = settings.signInUrl.replace('{return}', encodeURIComponent(location.href));
    link.hidden = false;
  } else if (settings.development) {
    $('sign-in-form').hidden = false;
  }
}

async function developmentSignIn() {
  for (;;) {
    await submitted($('sign-in-form'));
    const res = await fetch('/s/dev-sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ buyer: $('buyer').value }),
    });
    if (res.ok) {
      localStorage.setItem(TOKEN_KEY, (await res.json()).token);
      return;
    }
    $('state-text').textContent = 'That name cannot be used: 1 to 64 characters.';
  }
}

/** Until the sale (or its waiting room) opens: a countdown, then on. */
async function countdownTo(at, title, label) {
  show('scheduled', title, `It opens at ${new Date(at - clockOffset).toLocaleTimeString()}. Keep this page open; it moves on by itself.`);
  countdown(at, label);
  await sleepUntil(at);
}

function showBuyForm(limit) {
  const select = $('quantity');
  if (select.options.length !== limit) {
    select.replaceChildren(...Array.from({ length: limit }, (_, i) => new Option(String(i + 1), String(i + 1))));
  }
  $('buy').disabled = false;
  $('buy-form').hidden = false;
}

/** The purchase, until it is a reservation: 503 and 429 retried, the buyer's earlier reservation learnt from a 409. */
async function purchase() {
  const quantity = Number($('quantity').value || 1);
  $('buy').disabled = true;
  show('buying', 'Buying…', 'Reserving your unit.', { say: false });
  for (;;) {
    // The purchase is one per buyer: sending it again after a 503 cannot buy twice, and a retry of a
    // purchase that was taken answers 409 with its reservation.
    const answer = await askThroughBusy(() => api.purchase(quantity), 'Buying…');
    const code = answer.body?.code;
    if (answer.status === 202 || code === 'ALREADY_PURCHASED') {
      saved.reservation.set(answer.body.reservationId);
      return { reservationId: answer.body.reservationId };
    }
    return { refused: answer };
  }
}

const REFUSALS = {
  SOLD_OUT: ['sold_out', 'Sold out', 'Every unit has been sold. Thank you for waiting.'],
  SALE_ENDED: ['ended', 'The sale has ended', 'It is no longer possible to buy in this sale.'],
  INSUFFICIENT_STOCK: ['refused', 'Not enough left', 'Fewer units are left than you asked for. Choose fewer and buy again.'],
  ORDER_LIMIT_REACHED: ['refused', 'No more orders', 'You have opened as many orders in this sale as it allows.'],
  REBUY_COOLDOWN: ['refused', 'Please wait', 'You closed orders in this sale; you may buy again a little later.'],
  CLAIM_REQUIRED: ['refused', 'Not admitted', 'The shop has not cleared your account for this sale.'],
  QUEUE_FULL: ['refused', 'The waiting room is full', 'No more buyers can join this sale.'],
  CHALLENGE_REQUIRED: ['refused', 'Not admitted', "Your browser could not pass the waiting room's check. Reload the page to try again."],
};

function showRefusal(answer) {
  const [state, title, text] = REFUSALS[answer.body?.code] ?? [
    'refused',
    'Something went wrong',
    answer.body?.detail ?? `The shop answered ${answer.status}.`,
  ];
  show(state, title, text, { focus: true });
}

/** The reservation followed until it is an order, then the payment, then the receipt. */
async function followOrder(reservationId) {
  show('pending', 'Reserved', 'Your unit is reserved. Writing your order…', { focus: true });
  let paying = false;
  for (let polls = 0; ; polls++) {
    const answer = await askThroughBusy(() => api.reservation(reservationId), 'Checking your order');
    const order = answer.body;
    if (answer.status === 404) {
      saved.reservation.set('');
      return show('refused', 'Order not found', 'This reservation is not yours or no longer exists.', { focus: true });
    }
    if (order.status === 'pending') {
      if ($('state').dataset.state !== 'pending') show('pending', 'Reserved', 'Your unit is reserved. Writing your order…');
    } else if (order.status === 'created') {
      if ($('state').dataset.state !== 'payment') showPayment(order, () => (paying = true));
    } else if (order.status === 'paid') {
      // The stock left, as the receipt is shown: this buyer's units are gone from it.
      await refreshSale();
      return showReceipt(order);
    } else {
      const words = {
        expired: 'The time to pay ran out; the unit went back on sale.',
        cancelled: 'This order was cancelled.',
        rejected: 'This reservation could not become an order.',
        lost: 'This reservation was lost by the shop; it will contact you.',
      };
      return show('refused', `Order ${order.status}`, words[order.status] ?? `The order is ${order.status}.`, { focus: true });
    }
    // Quick at first (an order is written within a second or so), then calmer.
    await sleep(paying ? 500 : polls < 10 ? 500 : 2000);
  }
}

function showPayment(order, onPay) {
  const payBy = Date.parse(order.payBy);
  show(
    'payment',
    'Your order is waiting for payment',
    `Order ${order.orderId}: ${order.quantity} unit${order.quantity === 1 ? '' : 's'}. Pay before ${new Date(payBy - clockOffset).toLocaleTimeString()}.`,
    { focus: true },
  );
  countdown(payBy, 'Time left to pay:');
  if (settings.paymentUrl) {
    const link = $('pay-link');
    link.href = settings.paymentUrl.replace('{reservationId}', encodeURIComponent(order.reservationId));
    link.hidden = false;
  } else if (settings.development) {
    const button = $('pay');
    button.hidden = false;
    button.disabled = false;
    submitted(button).then(async () => {
      button.disabled = true;
      onPay();
      await askThroughBusy(() => api.demoPayment(order.reservationId), 'Paying…');
    });
  } else {
    $('state-text').textContent += ' The shop will ask you for the payment.';
  }
}

function showReceipt(order) {
  show(
    'receipt',
    'Thank you: your order is paid',
    `${order.quantity} unit${order.quantity === 1 ? '' : 's'} of ${sale.name}. Keep the order number below.`,
    { focus: true },
  );
  $('receipt-order').textContent = order.orderId;
  $('receipt-quantity').textContent = String(order.quantity);
  $('receipt-status').textContent = 'paid';
  $('receipt').hidden = false;
}

/** An open sale: the buy button once it has started. */
async function openSale() {
  for (;;) {
    if (sale.status === 'scheduled') {
      await countdownTo(Date.parse(sale.startsAt), 'The sale has not started yet', 'Starts in');
      await refreshSale();
      continue;
    }
    if (sale.status === 'sold_out') return show('sold_out', 'Sold out', 'Every unit has been sold.', { focus: true });
    if (sale.status === 'ended')
      return show('ended', 'The sale has ended', 'It is no longer possible to buy in this sale.', { focus: true });
    show('open', 'The sale is open', 'Choose how many units and buy.');
    showBuyForm(sale.perUserLimit);
    await submitted($('buy-form'));
    const bought = await purchase();
    if (bought.reservationId) return followOrder(bought.reservationId);
    if (bought.refused.body?.code === 'SALE_NOT_STARTED' || bought.refused.body?.code === 'INSUFFICIENT_STOCK') {
      await refreshSale();
      continue;
    }
    return showRefusal(bought.refused);
  }
}

/** The proof of work the door asks of a joining buyer, solved in a worker with a progress bar. */
async function solveChallenge() {
  show('checking', 'Checking your browser…', 'This takes a few seconds and keeps bots out of the line.');
  // The bar comes with the state, at nought until the worker reports: never a 'checking' without it.
  $('progress-bar').value = 0;
  $('progress').hidden = false;
  const answer = await askThroughBusy(() => api.challenge(), 'Checking your browser…');
  if (answer.status !== 200) return null;
  const worker = new Worker(new URL('./pow-worker.js', import.meta.url));
  try {
    return await new Promise((resolve, reject) => {
      worker.onmessage = ({ data }) => {
        if (data.progress !== undefined) {
          $('progress-bar').value = Math.round(data.progress * 100);
          $('progress-label').textContent = 'Checking…';
        } else if (data.number !== undefined) {
          resolve(altchaPayload(answer.body, data.number));
        } else reject(new Error(data.error));
      };
      worker.onerror = (event) => reject(new Error(event.message));
      worker.postMessage(answer.body);
    });
  } finally {
    worker.terminate();
  }
}

/**
 * Joins the line once per buyer, whatever the tabs: the join runs under a lock named for the sale and
 * buyer, the ticket is stored where every tab reads the same before the lock is let go, and a tab that
 * finds a ticket kept by another does not join again.
 */
async function joinOnce() {
  const join = async () => {
    if (await saved.ticket.load()) return null;
    const asks = sale.admission?.challenge;
    let solution = asks === 'pow' ? await solveChallenge() : undefined;
    for (;;) {
      const answer = await askThroughBusy(() => api.join(solution), 'Joining the line…');
      if (answer.status === 403 && answer.body?.code === 'CHALLENGE_REQUIRED' && solution === undefined) {
        // The door asks this buyer for a proof of work after all (`auto`): once.
        solution = await solveChallenge();
        continue;
      }
      if (answer.status === 200 && answer.body.ticket) await saved.ticket.set(answer.body.ticket);
      return answer;
    }
  };
  return navigator.locks ? navigator.locks.request(`flashsale-join-${saleId}-${saved.buyer}`, join) : join();
}

function showWaiting(body) {
  if (body.position === null) {
    show(
      'waiting',
      'You are in the line',
      'Places are drawn at random when the sale starts: arriving early buys nothing, arriving before the start is enough.',
      { say: $('state').dataset.state !== 'waiting' },
    );
    countdown(Date.parse(sale.startsAt), 'The draw in');
    return;
  }
  const first = Math.max(Number(saved.firstAhead.get() || 0), body.ahead);
  saved.firstAhead.set(first);
  const text = body.etaSeconds === null ? 'The line is held for a moment.' : `About ${inWords(body.etaSeconds)} to your turn.`;
  show('waiting', 'You are in the line', text, { say: false });
  announce(`Your place: ${body.position}. ${body.ahead} ahead of you. ${text}`);
  $('position').textContent = String(body.position);
  $('ahead').textContent = String(body.ahead);
  $('eta').textContent = body.etaSeconds === null ? 'on hold' : inWords(body.etaSeconds);
  $('figures').hidden = false;
  const done = first === 0 ? 100 : Math.round(((first - body.ahead) / first) * 100);
  $('progress-bar').value = done;
  $('progress-label').textContent = `${done}% of the way to your turn`;
  $('progress').hidden = false;
}

/** A queued sale: the waiting room's countdown, the line, the turn. */
async function queuedSale() {
  const opensAt = Date.parse(sale.startsAt) - (sale.admission.preQueueSeconds ?? 0) * 1000;
  if (serverNow() < opensAt) await countdownTo(opensAt, 'The waiting room opens soon', 'Opens in');
  const joined = await joinOnce();
  if (joined && joined.status !== 200) {
    if (joined.body?.code === 'QUEUE_NOT_OPEN') {
      await sleep(1000);
      return queuedSale();
    }
    return showRefusal(joined);
  }
  for (;;) {
    const answer = await ask(() =>
      waitInLine({
        api,
        tickets: saved.ticket,
        sleep,
        onAnswer: (a) => {
          answered(a);
          if (a.status === 200 && a.body.state === 'waiting') showWaiting(a.body);
        },
      }),
    );
    const state = answer.body?.state;
    if (answer.status !== 200) return showRefusal(answer);
    if (state === 'admitted') {
      if (await turn(answer)) return;
      continue;
    }
    if (state === 'not_joined') {
      await saved.ticket.set('');
      await joinOnce();
      continue;
    }
    if (state === 'used') return usedTurn();
    if (FINAL_QUEUE_STATES.has(state)) {
      const words = {
        sold_out: ['sold_out', 'Sold out', 'Every unit has been sold. Thank you for waiting.'],
        ended: ['ended', 'The sale has ended', 'It is no longer possible to buy in this sale.'],
        expired: ['expired', 'Your turn ran out', 'Your turn passed without a purchase, and went to the next in line.'],
      }[state];
      return show(words[0], words[1], words[2], { focus: true });
    }
  }
}

/** The turn: its countdown and the buy button, until the buyer buys or the turn runs out. True once the journey is over. */
async function turn(answer) {
  // Showing up: the door gives the full turn to a buyer who is there (its answer says until when).
  const here = await ask(() => api.here(saved.ticket.get()));
  const until = Date.parse(here.status === 200 && here.body?.admittedUntil ? here.body.admittedUntil : answer.body.admittedUntil);
  await refreshSale();
  show('turn', 'It is your turn', 'Buy now, before your turn runs out.', { focus: true });
  countdown(until, 'Your turn ends in');
  showBuyForm(sale.perUserLimit);
  $('buy').focus();
  const clicked = await Promise.race([submitted($('buy-form')).then(() => true), sleepUntil(until + 1000).then(() => false)]);
  if (!clicked) return false;
  const bought = await purchase();
  if (bought.reservationId) await followOrder(bought.reservationId);
  else if (bought.refused.body?.code === 'NOT_ADMITTED') return false;
  else showRefusal(bought.refused);
  return true;
}

/** The door says the turn was used: the purchase names its reservation (409 ALREADY_PURCHASED). */
async function usedTurn() {
  const bought = await purchase();
  if (bought.reservationId) return followOrder(bought.reservationId);
  return show('refused', 'Your turn was used', 'Your turn was used for a purchase; the order says the rest.', { focus: true });
}

async function main() {
  if (!saleId) return;
  // The token first, before anything is awaited: out of the address at once, and there for a tab
  // opened next.
  let identity = takeToken();
  api = createBuyerApi({ saleId, token: '' });
  if (!(await refreshSale())) return;
  for (let message = ''; ; message = 'Your sign-in has run out. Sign in again; your place is kept.') {
    identity ??= takeToken();
    if (!identity) {
      showSignIn(
        settings.signInUrl || settings.development
          ? message
          : `${message} Sign in at the shop, then come back to this page from there.`.trim(),
      );
      if (!settings.development || settings.signInUrl) return;
      await developmentSignIn();
      identity = takeToken();
    }
    api = createBuyerApi({ saleId, token: identity.token });
    saved = { ...storageFor(identity.buyer), buyer: identity.buyer };
    try {
      const reservation = saved.reservation.get();
      if (reservation) return await followOrder(reservation);
      return await (sale.admission?.mode === 'queue' ? queuedSale() : openSale());
    } catch (error) {
      if (!(error instanceof SignedOut)) throw error;
      localStorage.removeItem(TOKEN_KEY);
      identity = null;
    }
  }
}

// The browser knows before any request fails: said at once, and again by the next request that fails.
window.addEventListener('offline', () => {
  $('offline').hidden = false;
  announce('You are offline. Your place is kept.');
});

main().catch((error) => {
  show('refused', 'Something went wrong', 'Reload the page to carry on; your place is kept.', { focus: true });
  throw error;
});
