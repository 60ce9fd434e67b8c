--[[
  A buyer shows up for their turn (POST /api/sales/:id/queue/here): a turn still in its show-up window
  runs to its full end (admission + q_ttl) from now on; any other turn, or none, is left as it is. A
  purchase attempt shows up too, inside the reserve script. Idempotent.

  Input:
    KEYS[1] sale meta hash (includes/sale-meta.lua), KEYS[2] sale turns sorted set,
    KEYS[3] sale show-up sorted set (includes/door.lua)

    ARGV[1] user id

  Output:
    { -1 }        SaleNotFound
    { -9 }        SaleNotQueued (an open sale)
    { 1, turn }   the buyer's turn as the turns set holds it now (includes/door.lua), '' when none
]]
--@include "includes/sale-meta.lua"
--@include "includes/door.lua"
--@include "includes/door-admission.lua"

local meta, refusal = queued_sale_meta(KEYS[1])
if not meta then
  return refusal
end
local turn = running_turn(KEYS[2], ARGV[1], redis_now_ms())
if turn then
  return { 1, show_up(KEYS[2], KEYS[3], ARGV[1], turn) }
end
return { 1, redis.call('ZSCORE', KEYS[2], ARGV[1]) or '' }
