--[[
  Puts a buyer in a sale's waiting room, or finds them there: idempotent, a second join answers the
  place of the first. The only Redis call of a join.

  A buyer who joins before starts gets the draw the gateway made (cryptographic randomness) as score:
  fixed now, handed back in their signed ticket, so nobody (the shop included) can reorder the pre-start
  crowd after the fact. A later buyer gets the next arrival number. The clock is Redis's (TIME).

  A buyer whose signed ticket is of a door Redis lost (a flush, a failover to a replica behind: the
  gateway sees the ticket's epoch is not the door's) comes back with the score the ticket proves: the
  same place among everyone who came back, so the rebuilt queue keeps the old order. Unless the frontier
  has passed that place already (they came back after the rebuilt door's grace, restoring_until): then
  behind everyone, as a new arrival, so no rank below the frontier moves and nobody gets a second turn.
  A buyer who holds an order (the buyers hash, rebuilt from MySQL) comes back with their turn used.

  A new joiner (not one a ticket brings back) is refused past the sale's cap (q_max), and, where the
  gateway checked a solved challenge, with a solution used before: each is taken once, remembered until
  its challenge expires (the gateway verified its signature and expiry; only the once is Redis's).

  Input:
    KEYS[1] sale meta hash (record: sale meta and door terms, includes/sale-meta.lua, door-terms.lua)
    KEYS[2] sale queue sorted set (includes/door.lua)
    KEYS[3] sale door hash        (includes/door.lua)
    KEYS[4] sale turns sorted set (includes/door.lua)
    KEYS[5] sale buyers hash      (includes/buyer-record.lua)
    KEYS[6] sale used solutions sorted set (includes/door.lua)

    ARGV[1] user id
    ARGV[2] draw: an integer in [0, 2^52), used only if this join is a new one before starts
    ARGV[3] the score a signed ticket of a lost door proves, or '' (a plain join)
    ARGV[4] the solved challenge's id (its signature), or '' (none checked)
    ARGV[5] when that challenge expires (epoch ms), with ARGV[4]

  Output:
    { 1, score, rank, new }   in the queue: score, rank (0-based; -1 before starts, when ranks are not
                              drawn yet), new (1 joined now, 0 was there already)
    { -1 }                    SaleNotFound (not published, or Redis lost it)
    { -2 }                    SaleEnded (now >= ends)
    { -9 }                    SaleNotQueued (an open sale)
    { -10, opensAt }          QueueNotOpen (now < starts - q_pre): opensAt, epoch ms
    { -11, cap }              QueueFull: a new joiner and the queue holds q_max buyers
    { -12 }                   SolutionReplayed: a new joiner with a solution taken before
]]
--@include "includes/sale-meta.lua"
--@include "includes/door.lua"

local meta, refusal = queued_sale_meta(KEYS[1], 'ends', 'q_pre', 'q_max')
if not meta then
  return refusal
end
local starts, ends = tonumber(meta[2]), tonumber(meta[3])
local now = redis_now_ms()
if now >= ends then
  return { -2 }
end

local score = queue_score(KEYS[2], ARGV[1])
local new = 0
if not score then
  local opens = starts - tonumber(meta[4]) * 1000
  if now < opens then
    return { -10, opens }
  end
  if ARGV[3] == '' then
    local cap = tonumber(meta[5])
    if cap and redis.call('ZCARD', KEYS[2]) >= cap then
      return { -11, cap }
    end
    if ARGV[4] ~= '' then
      -- Expired solutions are forgotten first: their challenges are refused by the gateway anyway.
      redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
      if redis.call('ZADD', KEYS[6], 'NX', ARGV[5], ARGV[4]) == 0 then
        return { -12 }
      end
    end
  end
  if ARGV[3] ~= '' then
    score = tonumber(ARGV[3])
    -- Arrivals from now on queue behind every arrival that comes back.
    local arrival = score - 2 ^ 52
    if arrival > (tonumber(redis.call('HGET', KEYS[3], 'seq')) or 0) then
      redis.call('HSET', KEYS[3], 'seq', string.format('%.0f', arrival))
    end
  elseif now < starts and redis.call('HGET', KEYS[3], 'drawn') ~= '1' then
    score = tonumber(ARGV[2])
  else
    score = next_arrival(KEYS[3])
  end
  -- As digits: Lua would write the number with 14 significant digits, and these have up to 16.
  redis.call('ZADD', KEYS[2], string.format('%.0f', score), ARGV[1])
  if ARGV[3] ~= '' then
    local front = tonumber(redis.call('HGET', KEYS[3], 'front')) or 0
    if now >= starts and redis.call('ZRANK', KEYS[2], ARGV[1]) < front then
      score = next_arrival(KEYS[3])
      redis.call('ZADD', KEYS[2], string.format('%.0f', score), ARGV[1])
    end
    if redis.call('HEXISTS', KEYS[5], ARGV[1]) == 1 then
      redis.call('ZADD', KEYS[4], 'NX', -now, ARGV[1])
    end
  end
  new = 1
end
local rank = -1
if now >= starts then
  rank = redis.call('ZRANK', KEYS[2], ARGV[1])
end
return { 1, score, rank, new }
