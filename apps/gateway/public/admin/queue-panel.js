// A queued sale's waiting room on the dashboard: its figures as the sale's view pushes them
// (door-view.ts on the gateway), and the operator's controls of admission (POST
// /api/admin/sales/:id/admission: pause, resume, the rate). A classic script beside dashboard.js, using
// its el, $ and count; every value goes in through textContent.
/* global el, $, count */
/* exported renderDoor, bindDoorControls */
'use strict';

function durationInWords(seconds) {
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${Math.round((seconds / 3600) * 10) / 10} h`;
}

// Why the last in line has no ETA: what holds the door.
function etaInWords(door) {
  if (door.etaLastSeconds !== null)
    return door.waiting === 0 ? 'nobody waiting' : `about ${durationInWords(door.etaLastSeconds)} at this rate`;
  if (door.doorPaused) return 'none while admission is paused';
  if (!door.open) return 'none while the door is closed';
  return 'none while admitted buyers hold every unit';
}

// The panel of a queued sale; hidden for an open sale (door null). Each value's element names the field
// of the pushed door it shows (data-field) and holds its raw value (data-value).
function renderDoor(door) {
  $('door-panel').hidden = !door;
  if (!door) return;
  const row = (label, field, text, hint, value = door[field]) => {
    const dt = el('dt', label);
    if (hint) dt.append(el('span', ` ${hint}`, 'muted'));
    const dd = el('dd', text);
    dd.dataset.field = field;
    dd.dataset.value = String(value);
    return [dt, dd];
  };
  const shadow = door.shadowJoins;
  const shadowTotal = shadow.flagged + shadow.challenge + shadow.flood;
  $('door-figures').replaceChildren(
    ...row('Waiting', 'waiting', count(door.waiting), 'not reached by the frontier'),
    ...row('Admitted, not bought yet', 'unused', count(door.unused), `turns of ${door.admissionTtlSeconds} s`),
    ...row('Frontier', 'front', count(door.front), 'places given a turn'),
    ...row('Admission rate', 'admitPerSecond', `${door.admitPerSecond} /s`),
    ...row('Abandoned turns', 'abandoned', count(door.abandoned), 'ended without a purchase'),
    ...row(
      'Not shown up yet',
      'awaitingShowUp',
      count(door.awaitingShowUp),
      `of those admitted; a turn lapses after ${door.showUpSeconds} s without`,
    ),
    ...row('No-show rate', 'noShowRate', `${Math.round(door.noShowRate * 100)}%`, 'of recent turns; the door admits ahead of it'),
    ...row('Room under the stock bound', 'room', count(door.room), `remaining × ${door.noShowFactor} − admitted, no-shows allowed for`),
    ...row(
      'Shadow queue',
      'shadowJoins',
      count(shadowTotal),
      `joins answered and never admitted, by this gateway: ${shadow.flagged} flagged, ${shadow.challenge} refused solutions, ${shadow.flood} floods`,
      shadowTotal,
    ),
    ...row('Last in line admitted in', 'etaLastSeconds', etaInWords(door)),
    ...row(
      'Door',
      'open',
      door.doorPaused ? 'paused by the operator' : door.open ? 'admitting' : 'closed (not started, ended, sale paused or restoring)',
    ),
  );
  $('door-pause').disabled = door.doorPaused;
  $('door-resume').disabled = !door.doorPaused;
  const rate = $('door-rate');
  if (document.activeElement !== rate && rate.dataset.edited !== 'true') rate.value = String(door.admitPerSecond);
}

// `control(path, body)` is dashboard.js's: it sends the change with the session's CSRF token.
function bindDoorControls(control) {
  $('door-pause').addEventListener('click', () => void control('admission', { paused: true }));
  $('door-resume').addEventListener('click', () => void control('admission', { paused: false }));
  $('door-rate').addEventListener('input', () => ($('door-rate').dataset.edited = 'true'));
  $('door-set-rate').addEventListener('click', () => {
    $('door-rate').dataset.edited = 'false';
    void control('admission', { admitPerSecond: Number($('door-rate').value) });
  });
}
