--[[
  A buyer's turn at the door, as the reserve script checks and uses it (the turns sorted set of
  includes/door.lua: user id -> admittedUntil while running and unused, -admittedUntil once used).
]]

-- The buyer's turn's end (epoch ms) if one runs at `now` and is unused; nil otherwise.
local function running_turn(turns, user_id, now)
  local turn = tonumber(redis.call('ZSCORE', turns, user_id))
  if turn and turn > now then
    return turn
  end
  return nil
end

-- Marks the turn used: it buys once, and no longer counts as admitted-and-unused.
local function use_turn(turns, user_id, turn)
  redis.call('ZADD', turns, 'XX', -turn, user_id)
end
