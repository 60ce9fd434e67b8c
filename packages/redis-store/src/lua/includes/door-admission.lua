--[[
  A buyer's turn at the door, as the reserve and show-up scripts check and use it (the turns and
  show_up sorted sets of includes/door.lua: user id -> admittedUntil while running and unused,
  -admittedUntil once used; a turn still in its show-up window has its full end in show_up).
]]

-- The buyer's turn's end (epoch ms) if one runs at `now` and is unused; nil otherwise.
local function running_turn(turns, user_id, now)
  local turn = tonumber(redis.call('ZSCORE', turns, user_id))
  if turn and turn > now then
    return turn
  end
  return nil
end

-- Marks the turn used: it buys once, and no longer counts as admitted-and-unused; a turn used within its
-- show-up window leaves the window (its buyer came).
local function use_turn(turns, show_up_key, user_id, turn)
  redis.call('ZADD', turns, 'XX', -turn, user_id)
  redis.call('ZREM', show_up_key, user_id)
end

-- The buyer of a running turn shows up: a turn still in its show-up window runs to its full end from now
-- on. Answers the turn's end. The ZREM comes first: it needs no memory, and once a script has written,
-- Redis no longer refuses its next write for memory (a refusal that shows up cannot fail half way).
local function show_up(turns, show_up_key, user_id, turn)
  local full = redis.call('ZSCORE', show_up_key, user_id)
  if full then
    redis.call('ZREM', show_up_key, user_id)
    redis.call('ZADD', turns, 'XX', full, user_id)
    return tonumber(full)
  end
  return turn
end
