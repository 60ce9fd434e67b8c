--[[
  Moves a sale's door on and reports it: the one place admission happens. Called by every gateway that
  has buyers of the sale asking (a few times a second at most, whatever the crowd: door-frontier.ts), and
  by the operator's admission control, which changes the rate or the door's pause here, after the door
  has been moved on at the old setting.

  The frontier is lazy: admissions are earned at q_rate per second of Redis's clock since the last call
  (none while the door or the sale is paused, none before starts or after ends), banked up to one
  second's worth (a door nobody looked at for a while does not admit a burst), and given to the next
  ranks in the queue, as many as the stock bound allows (the door's clock starts at starts):

      admitted-and-unused <= floor(remaining x q_factor)

  Units that may still come back (unpaid orders, entries on their way to MySQL) are not admitted against
  until they do come back: when one does (an expiry, a cancel, stock added), `remaining` rises and the
  next rank in the queue is admitted, never whoever asks fastest. A turn not used within q_ttl seconds
  ends here (it is counted and kept as abandoned: score 0) and frees its place in the bound. A door begun again after
  Redis lost it (rebuild-sale-6.lua) admits nobody before its restoring_until.

  No-shows (a sale whose q_show is below q_ttl): a new turn runs q_show seconds until its buyer shows up
  (a purchase attempt, or show-up-3.lua), and only then to admission + q_ttl; a turn whose window lapses
  is a no-show, abandoned here. The door counts, of the turns given a window, those whose buyer came and
  those who did not, weighs the recent ones (NO_SHOW_DECAY per turn counted: about the last 100), counts
  a turn whose buyer has not come within OVERDUE_AFTER_MS, or half the window if shorter (overdue: a
  buyer who honours Retry-After hears of a turn within 5 s), as a no-show until it is resolved, and admits ahead of the measured no-show rate p
  (at most NO_SHOW_RATE_MAX): a turn whose buyer came counts 1 buyer in the stock bound, a turn still in
  its window (1 - p), an overdue one 0:

      came + (1 - p) x fresh <= floor(remaining x q_factor)

  so at most ten turns a unit on sale run that are not overdue; an overdue one lapses with its window
  (includes/door-no-shows.lua). The rate still paces every admission, and the reserve script still guards the stock: a buyer
  admitted ahead who finds the units gone is refused SoldOut, never sold what is not there.

  Input:
    KEYS[1] sale meta hash   (record: sale meta and door terms, includes/sale-meta.lua, door-terms.lua)
    KEYS[2] sale queue sorted set, KEYS[3] sale turns sorted set, KEYS[4] sale door hash,
    KEYS[5] sale paid hash, KEYS[6] sale show-up sorted set   (all: includes/door.lua)

    ARGV[1] new admit rate per second, or '' to keep it
    ARGV[2] new door pause '1' / '0', or '' to keep it

  Output:
    { -1 }  SaleNotFound
    { -9 }  SaleNotQueued (an open sale)
    { 1, now, starts, ends, q_pre, front, queued, unused, remaining, may_come_back, abandoned, rate,
         q_ttl, q_factor, door paused (0/1), sale paused (0/1), epoch, restoring until (0: none),
         q_show, q_pow, q_pow_max, q_claim, q_max (the guards the gateway checks at join, as written:
         '' when absent, includes/door-terms.lua), awaiting_show_up (unused turns whose buyer has not shown up),
         no-show rate (the measured p), room (admissions the stock bound allows now, at least 0),
         next overdue at (epoch ms when the next fresh turn becomes overdue; 0: none) }
         numbers as strings where they may be fractional (rate, factor, no-show rate)
]]
--@include "includes/sale-meta.lua"
--@include "includes/door.lua"
--@include "includes/door-no-shows.lua"

local meta, refusal = queued_sale_meta(KEYS[1], 'ends', 'q_pre', 'remaining', 'stock', 'q_rate', 'q_ttl', 'q_factor',
  'q_paused', 'paused', 'op_paused', 'q_show', 'q_pow', 'q_pow_max', 'q_claim', 'q_max')
if not meta then
  return refusal
end
local starts, ends = tonumber(meta[2]), tonumber(meta[3])
local remaining, stock = tonumber(meta[5]), tonumber(meta[6])
local rate, ttl_ms, factor = tonumber(meta[7]), tonumber(meta[8]) * 1000, tonumber(meta[9])
local door_paused = meta[10] == '1'
local sale_paused = meta[11] == '1' or meta[12] == '1'

local now = redis_now_ms()
local epoch = door_epoch(KEYS[4], now)
local door = redis.call('HMGET', KEYS[4], 'front', 'credit', 'at', 'abandoned', 'restoring_until',
  'given', 'missed', 'shown', 'w_shown', 'w_missed')
local front = tonumber(door[1]) or 0
local credit = tonumber(door[2]) or 0
local at = tonumber(door[3])
local abandoned = tonumber(door[4]) or 0
local restoring_until = tonumber(door[5]) or 0
local measure = {
  given = tonumber(door[6]) or 0,
  missed = tonumber(door[7]) or 0,
  shown = tonumber(door[8]) or 0,
  w_shown = tonumber(door[9]) or 0,
  w_missed = tonumber(door[10]) or 0,
}
local show_ms = tonumber(meta[13] or '')
local windowed = show_ms ~= nil and show_ms * 1000 < ttl_ms
if windowed then
  show_ms = show_ms * 1000
end

-- Turns that ran out unused: their abandonment recorded (score 0), so a buyer is told `expired` only of
-- a turn the door holds as abandoned, never of one a store lost (used ones are negative and stay). One
-- still in its show-up window is a no-show.
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '(0', now)
local missed = 0
for _, user_id in ipairs(expired) do
  redis.call('ZADD', KEYS[3], 'XX', 0, user_id)
  missed = missed + redis.call('ZREM', KEYS[6], user_id)
end
abandoned = abandoned + #expired
local unused = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')
local awaiting_show_up = math.min(redis.call('ZCARD', KEYS[6]), unused)
local queued = redis.call('ZCARD', KEYS[2])
-- Turns whose buyer has not come though OVERDUE_AFTER_MS (or half the window, if shorter) have passed
-- since they were given (the set holds each one's full end: given + q_ttl).
local overdue = 0
if windowed then
  overdue = redis.call('ZCOUNT', KEYS[6], '-inf', now - math.min(show_ms / 2, OVERDUE_AFTER_MS) + ttl_ms)
end
local no_show_rate = measure_no_shows(measure, missed, awaiting_show_up, overdue)

local open = now >= starts and now < ends and now >= restoring_until and not door_paused and not sale_paused
if open then
  -- Earned since the last look, or since the start: the first look after it admits at once.
  local since = math.max(at or starts, starts)
  credit = credit + rate * math.max(0, now - since) / 1000
  credit = math.min(credit, math.max(rate, 1))
  local n = math.min(math.floor(credit), admission_room(remaining, factor, unused, awaiting_show_up, overdue, no_show_rate), queued - front)
  if n > 0 then
    local full_until = now + ttl_ms
    local turn_until = windowed and now + show_ms or full_until
    for _, user_id in ipairs(redis.call('ZRANGE', KEYS[2], front, front + n - 1)) do
      if redis.call('ZADD', KEYS[3], 'NX', turn_until, user_id) == 1 and windowed then
        redis.call('ZADD', KEYS[6], full_until, user_id)
        measure.given = measure.given + 1
        awaiting_show_up = awaiting_show_up + 1
      end
    end
    front = front + n
    credit = credit - n
    unused = unused + n
  end
  redis.call('HSET', KEYS[4], 'drawn', '1')
else
  credit = 0
end
if ARGV[1] ~= '' then
  redis.call('HSET', KEYS[1], 'q_rate', ARGV[1])
  rate = tonumber(ARGV[1])
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'q_paused', ARGV[2])
  door_paused = ARGV[2] == '1'
end
-- When the next turn still fresh becomes overdue (and may let the door move): waiting buyers held by the
-- stock are asked back then rather than after the usual 5 s.
local next_overdue_at = 0
if windowed then
  local overdue_ms = math.min(show_ms / 2, OVERDUE_AFTER_MS)
  local first = redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. (now - overdue_ms + ttl_ms), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if first[2] then
    next_overdue_at = tonumber(first[2]) - ttl_ms + overdue_ms
  end
end
redis.call('HSET', KEYS[4], 'front', front, 'credit', tostring(credit), 'at', now, 'abandoned', abandoned,
  'given', measure.given, 'missed', measure.missed, 'shown', measure.shown,
  'w_shown', tostring(measure.w_shown), 'w_missed', tostring(measure.w_missed), 'no_show_rate', tostring(no_show_rate))

local paid_units = tonumber(redis.call('HGET', KEYS[5], 'units')) or 0
return { 1, now, starts, ends, tonumber(meta[4]), front, queued, unused, remaining, stock - remaining - paid_units,
  abandoned, tostring(rate), tonumber(meta[8]), tostring(factor), door_paused and 1 or 0, sale_paused and 1 or 0,
  epoch, restoring_until, meta[13] or '', meta[14] or '', meta[15] or '', meta[16] or '', meta[17] or '',
  awaiting_show_up, tostring(no_show_rate), math.max(0, admission_room(remaining, factor, unused, awaiting_show_up, overdue, no_show_rate)),
  next_overdue_at }
