#!lua flags=no-writes
--[[
  Whether the Redis server that holds a sale refuses writes for memory: over `maxmemory` as Redis
  itself judges it (used memory less what it does not count against the limit, replication and AOF
  buffers), so under `noeviction` every write is refused. A script so that on a Redis Cluster it runs
  on the sale's own master; flagged `no-writes` so that Redis runs it at its limit.

  Input:
    KEYS[1] sale meta hash (only its slot is used: nothing is read from it)

  Output: used_memory, mem_not_counted_for_evict, maxmemory (strings; maxmemory 0: no limit)
]]
local memory = redis.call('INFO', 'memory')
return {
  string.match(memory, 'used_memory:(%d+)') or '0',
  string.match(memory, 'mem_not_counted_for_evict:(%d+)') or '0',
  string.match(memory, 'maxmemory:(%d+)') or '0',
}
