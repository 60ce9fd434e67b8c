--[[
  Takes back the Redis state of a sale whose create failed (see sale-publication.ts), unless it has
  taken a reservation: then buyers were told yes, and the sale must stand.

  Input:
    KEYS[1] sale meta hash   (record: sale meta, includes/sale-meta.lua)
    KEYS[2] sale buyers hash (only counted)
    KEYS[3] sale stream      (deleted whole)

    ARGV[1] generation the failed create published (another generation is not this create's state)

  Output:
    1  withdrawn: meta and stream deleted
    0  nothing to withdraw (never published, or already withdrawn)
    -1 the state is another generation's; nothing changed
    -2 the sale has buyers; nothing changed
]]
--@include "includes/sale-meta.lua"

local gen = sale_generation(KEYS[1])
if not gen then
  return 0
end
if gen ~= ARGV[1] then
  return -1
end
if redis.call('HLEN', KEYS[2]) > 0 then
  return -2
end
redis.call('DEL', KEYS[1], KEYS[3])
return 1
