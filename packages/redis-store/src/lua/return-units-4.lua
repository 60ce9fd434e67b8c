--[[
  Gives the units of closed orders (cancelled or expired in MySQL) back to the sale's remaining, each
  order at most once per generation, frees each buyer to buy again, and counts the closed order against
  the buyer in the same step (the sale's rebuy rule, includes/buyer-history.lua). The first count in a
  sale sets the meta's `closed` (and its packed terms): from then on the reserve script reads a buyer's
  count before accepting them.

  MySQL closed the order and, in the same transaction, recorded what it owes Redis (a stock_returns row
  naming the sale's generation at the close). This is the other half. It may run any number of times for
  one order (a returner that died before marking the row returned, two returners, the gateway's cancel
  racing the worker's sweep): the returned hash remembers each reservation given back in this state, so
  a repeat gives nothing. It applies only to the generation the order closed in: a rebuild after the
  close counted the units as remaining already (remaining = stock - live orders), and its new state has a
  new generation, so a row of the old one is refused here and the rebuild settles it in MySQL.

  Input:
    KEYS[1] sale meta hash   (record: sale meta, includes/sale-meta.lua)
    KEYS[2] sale buyers hash (record: buyer record, includes/buyer-record.lua)
    KEYS[3] sale returned hash (reservation id -> '1': given back in this generation; a rebuild empties it)
    KEYS[4] sale closed hash (user id -> the buyer's closed orders, includes/buyer-history.lua)

    ARGV[1] generation the orders closed in
    ARGV[2 + 3k], ARGV[3 + 3k], ARGV[4 + 3k]: reservation id, user id, quantity of each order (k = 0..)

  Output:
    { -1 }                  the sale is not in Redis (lost with Redis's data: the rebuild will settle)
    { -2, generation }      Redis holds another generation (rebuilt since, or not yet rebuilt)
    { 1, c1, c2, ... }      one code per order, in order: 1 given back now, 0 given back before,
                            -3 refused: it would put remaining above stock (never expected; reported)
]]
--@include "includes/sale-meta.lua"
--@include "includes/buyer-history.lua"

local generation = sale_generation(KEYS[1])
if not generation then
  return { -1 }
end
if generation ~= ARGV[1] then
  return { -2, generation }
end

local stock = tonumber(redis.call('HGET', KEYS[1], 'stock'))
local remaining = tonumber(redis.call('HGET', KEYS[1], 'remaining'))
local codes = { 1 }
local counted = false
local now = redis_now_ms()
for i = 2, #ARGV - 2, 3 do
  local reservation_id, user_id, quantity = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if redis.call('HEXISTS', KEYS[3], reservation_id) == 1 then
    codes[#codes + 1] = 0
  elseif remaining + quantity > stock then
    codes[#codes + 1] = -3
  else
    redis.call('HSET', KEYS[3], reservation_id, '1')
    -- Only the record of this reservation: the buyer may hold a newer one already (bought again after a
    -- rebuild that did not restore this order).
    local record = redis.call('HGET', KEYS[2], user_id)
    local removed = record ~= false and string.sub(record, 1, #reservation_id + 1) == reservation_id .. '|'
    if removed then
      redis.call('HDEL', KEYS[2], user_id)
    end
    remaining = return_sale_stock(KEYS[1], quantity, removed)
    -- Counted with the return, once per order (the returned hash above): the buyer is free to buy again
    -- from this step on, and the rule judges that rebuy by this count.
    record_closed_order(KEYS[4], user_id, now)
    codes[#codes + 1] = 1
    counted = true
  end
end
if counted then
  mark_sale_closed(KEYS[1])
end
return codes
