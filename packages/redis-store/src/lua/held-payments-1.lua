--[[
  What the expiry of a sale needs from Redis, read in one step: Redis's clock now, and every payment
  event recorded on arrival (receive-payment-1.lua) and not yet in MySQL. An order whose payBy is not
  past on this clock is not expired; an order with a payment that arrived before its payBy is paid, not
  expired. A payment recorded after this read arrived after this instant: past the payBy of every order
  this read lets the expiry close.

  Input:
    KEYS[1] the sale's payments hash (record: event id -> "<reservationId>|<amountCents>|<receivedAtMs>")

  Output:
    { nowMs, eventId1, record1, eventId2, record2, ... }
]]
--@include "includes/sale-meta.lua"

local reply = { redis_now_ms() }
local held = redis.call('HGETALL', KEYS[1])
for i = 1, #held do
  reply[#reply + 1] = held[i]
end
return reply
