--[[
  Makes a sale live in Redis: its meta hash, and its stream with the order writers' consumer group.
  Idempotent, and never overwrites a sale that is already live: its remaining stock is the truth of
  every reservation taken since, and only the reconciler (after draining the stream) may rebuild it.

  Input:
    KEYS[1] sale meta hash
    KEYS[2] sale stream

    ARGV[1] name
    ARGV[2] stock (total units)
    ARGV[3] per-user limit
    ARGV[4] starts at (epoch ms)
    ARGV[5] ends at (epoch ms)
    ARGV[6] consumer group name
    ARGV[7] generation (a marker of this Redis state, so the reconciler can tell a rebuilt one)

  Output:
    1  published now
    0  was already live; nothing changed
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end

redis.call('HSET', KEYS[1],
  'name', ARGV[1],
  'stock', ARGV[2],
  'remaining', ARGV[2],
  'limit', ARGV[3],
  'starts', ARGV[4],
  'ends', ARGV[5],
  'paused', '0',
  'gen', ARGV[7])

-- From id 0, not '$': if a stream somehow survived without its meta, none of its entries is skipped.
local ok, err = pcall(redis.call, 'XGROUP', 'CREATE', KEYS[2], ARGV[6], '0', 'MKSTREAM')
if not ok and not string.find(tostring(err), 'BUSYGROUP') then
  return redis.error_reply(tostring(err))
end
return 1
