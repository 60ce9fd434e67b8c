--[[
  Rewrites a sale's Redis state from MySQL's record, paused. The reconciler calls it only once the
  sale's stream has drained (or was lost with Redis's data), so no reservation is in flight that MySQL
  does not know; it then refills the buyers in chunks and resumes the sale.

  Input:
    KEYS[1] sale meta hash
    KEYS[2] sale buyers hash (emptied here; refilled by the caller)
    KEYS[3] sale stream

    ARGV[1] name
    ARGV[2] stock
    ARGV[3] per-user limit
    ARGV[4] starts at (epoch ms)
    ARGV[5] ends at (epoch ms)
    ARGV[6] remaining (stock - units in live orders)
    ARGV[7] generation (new; also recorded in MySQL under the sale row lock)
    ARGV[8] consumer group name

  Output:
    1
]]
--@include "includes/ensure-group.lua"

redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[1],
  'name', ARGV[1],
  'stock', ARGV[2],
  'limit', ARGV[3],
  'starts', ARGV[4],
  'ends', ARGV[5],
  'remaining', ARGV[6],
  'gen', ARGV[7],
  'paused', '1')

-- A lost stream (and its group) is recreated empty; a surviving one keeps its group and history.
local failed = ensure_group(KEYS[3], ARGV[8])
if failed then
  return failed
end
return 1
