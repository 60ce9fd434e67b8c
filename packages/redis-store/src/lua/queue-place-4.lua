--[[
  Where one buyer stands in a sale's waiting room: read by the gateway only when it cannot answer from
  the buyer's ticket and the cached door (no ticket, a ticket from before the draw, or a rank the
  frontier has reached, whose turn only Redis knows).

  Input:
    KEYS[1] sale meta hash, KEYS[2] sale queue sorted set, KEYS[3] sale turns sorted set,
    KEYS[4] sale door hash (includes/door.lua)

    ARGV[1] user id

  Output:
    { -1 }                            SaleNotFound
    { -9 }                            SaleNotQueued (an open sale)
    { 0 }                             not in the queue
    { 1, score, rank, turn, front }   rank -1 before starts (not drawn yet); turn as in the turns set
                                      (admittedUntil, or minus it once used) or '' when none runs;
                                      front: ranks given a turn so far
]]
--@include "includes/sale-meta.lua"
--@include "includes/door.lua"

local meta, refusal = queued_sale_meta(KEYS[1])
if not meta then
  return refusal
end
local score = queue_score(KEYS[2], ARGV[1])
if not score then
  return { 0 }
end
local rank = -1
if redis_now_ms() >= tonumber(meta[2]) then
  rank = redis.call('ZRANK', KEYS[2], ARGV[1])
end
local turn = redis.call('ZSCORE', KEYS[3], ARGV[1]) or ''
local front = tonumber(redis.call('HGET', KEYS[4], 'front')) or 0
return { 1, score, rank, turn, front }
