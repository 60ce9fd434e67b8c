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

  Input:
    KEYS[1] sale meta hash   (record: sale meta and door terms, includes/sale-meta.lua, door-terms.lua)
    KEYS[2] sale queue sorted set, KEYS[3] sale turns sorted set, KEYS[4] sale door hash,
    KEYS[5] sale paid hash   (all: includes/door.lua)

    ARGV[1] new admit rate per second, or '' to keep it
    ARGV[2] new door pause '1' / '0', or '' to keep it

  Output:
    { -1 }  SaleNotFound
    { -9 }  SaleNotQueued (an open sale)
    { 1, now, starts, ends, q_pre, front, queued, unused, remaining, may_come_back, abandoned, rate,
         q_ttl, q_factor, door paused (0/1), sale paused (0/1), epoch, restoring until (0: none),
         q_show, q_pow, q_pow_max, q_claim, q_max (the guards the gateway checks at join, as written:
         '' when absent, includes/door-terms.lua) }
         numbers as strings where they may be fractional (rate, factor)
]]
--@include "includes/sale-meta.lua"
--@include "includes/door.lua"

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
local door = redis.call('HMGET', KEYS[4], 'front', 'credit', 'at', 'abandoned', 'restoring_until')
local front = tonumber(door[1]) or 0
local credit = tonumber(door[2]) or 0
local at = tonumber(door[3])
local abandoned = tonumber(door[4]) or 0
local restoring_until = tonumber(door[5]) or 0

-- Turns that ran out unused: their abandonment recorded (score 0), so a buyer is told `expired` only of
-- a turn the door holds as abandoned, never of one a store lost (used ones are negative and stay).
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '(0', now)
for _, user_id in ipairs(expired) do
  redis.call('ZADD', KEYS[3], 'XX', 0, user_id)
end
abandoned = abandoned + #expired
local unused = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')
local queued = redis.call('ZCARD', KEYS[2])

local open = now >= starts and now < ends and now >= restoring_until and not door_paused and not sale_paused
if open then
  -- Earned since the last look, or since the start: the first look after it admits at once.
  local since = math.max(at or starts, starts)
  credit = credit + rate * math.max(0, now - since) / 1000
  credit = math.min(credit, math.max(rate, 1))
  local room = math.floor(remaining * factor) - unused
  local n = math.min(math.floor(credit), room, queued - front)
  if n > 0 then
    local until_ms = now + ttl_ms
    for _, user_id in ipairs(redis.call('ZRANGE', KEYS[2], front, front + n - 1)) do
      redis.call('ZADD', KEYS[3], 'NX', until_ms, user_id)
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
redis.call('HSET', KEYS[4], 'front', front, 'credit', tostring(credit), 'at', now, 'abandoned', abandoned)

local paid_units = tonumber(redis.call('HGET', KEYS[5], 'units')) or 0
return { 1, now, starts, ends, tonumber(meta[4]), front, queued, unused, remaining, stock - remaining - paid_units,
  abandoned, tostring(rate), tonumber(meta[8]), tostring(factor), door_paused and 1 or 0, sale_paused and 1 or 0,
  epoch, restoring_until, meta[13] or '', meta[14] or '', meta[15] or '', meta[16] or '', meta[17] or '' }
