--[[
  Pauses or resumes intake of a sale. While paused the reserve script refuses every purchase, which is
  what lets the reconciler wait for the stream to drain knowing nothing new is coming in.

  Input:
    KEYS[1] sale meta hash

    ARGV[1] '1' to pause, '0' to resume

  Output:
    1  done
    0  the sale is not in Redis (nothing written: the meta hash is not recreated with one field)
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'paused', ARGV[1])
return 1
