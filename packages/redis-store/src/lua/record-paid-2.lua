--[[
  Records that an order of a queued sale was paid, so its units can never come back: the door tells the
  buyers still waiting `sold_out` once nothing is left and nothing unpaid remains (admit-queue-6.lua).
  Idempotent per reservation. Nothing for an open sale.

  Input:
    KEYS[1] sale meta hash (door terms, includes/door-terms.lua)
    KEYS[2] sale paid hash (includes/door.lua)

    ARGV[1] reservation id
    ARGV[2] units

  Output:
    1 recorded now, 0 recorded before or an open sale, -1 the sale is not in Redis
]]
local mode = redis.call('HMGET', KEYS[1], 'adm', 'stock')
if not mode[2] then
  return -1
end
if mode[1] ~= '1' then
  return 0
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[2], 'units', ARGV[2])
return 1
