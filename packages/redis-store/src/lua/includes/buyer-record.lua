--[[
  A buyer's record in the sale's buyers hash (TypeScript: buyer-record.ts): user id ->
  "<reservationId>|<quantity>", the reservation the buyer holds.
]]
local function record_buyer(key, user_id, reservation_id, quantity)
  redis.call('HSET', key, user_id, reservation_id .. '|' .. quantity)
end
