--[[
  Pauses or resumes intake of a sale. While paused the reserve script refuses every purchase, which is
  what lets the reconciler wait for the stream to drain knowing nothing new is coming in.

  Input:
    KEYS[1] sale meta hash (record: sale meta, includes/sale-meta.lua)

    ARGV[1] '1' to pause, '0' to resume
    ARGV[2] optional: the generation the state must hold. A rebuild resumes the state it wrote, never
            another: after a failover to a replica its switch never reached, the primary holds the
            state the rebuild replaced, which must stay paused

  Output:
    1  done
    0  the sale is not in Redis (nothing written: the meta hash is not recreated with one field)
   -1  the state holds another generation than ARGV[2] (nothing written)
]]
--@include "includes/sale-meta.lua"

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if ARGV[2] and sale_generation(KEYS[1]) ~= ARGV[2] then
  return -1
end
set_sale_paused(KEYS[1], ARGV[1] == '1')
return 1
