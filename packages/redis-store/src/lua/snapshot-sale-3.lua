#!lua flags=no-writes
--[[
  Reads what Redis holds for a sale at one instant: the reconciler's look (sale-snapshot.ts). A script
  rather than a MULTI because Redis refuses every command queued in a MULTI once it is over `maxmemory`,
  reads included, and the look is what leads to retention, the one thing that frees memory then. Flagged
  `no-writes`: Redis runs it at its memory limit (and on a replica), and refuses it any write.

  Input:
    KEYS[1] sale meta hash (record: sale meta, includes/sale-meta.lua)
    KEYS[2] sale buyers hash
    KEYS[3] sale stream

    ARGV[1..n] the meta fields to read (sale-meta.ts SALE_COUNTER_FIELDS)

  Output: a list of
    1 TIME's reply (seconds, microseconds)
    2 the meta fields' values (HMGET: nil for a missing field)
    3 HLEN of the buyers
    4 the stream's last entry (XREVRANGE + - COUNT 1)
    5 XLEN of the stream
    6 XINFO GROUPS of the stream, or false when there is no stream to ask
    7 INFO replication (the server's history: master_replid)
    8 memory as Redis judges its limit: used_memory, mem_not_counted_for_evict, maxmemory (strings)
]]
local groups = redis.pcall('XINFO', 'GROUPS', KEYS[3])
if type(groups) == 'table' and groups.err then
  groups = false
end
local memory = redis.call('INFO', 'memory')
return {
  redis.call('TIME'),
  redis.call('HMGET', KEYS[1], unpack(ARGV)),
  redis.call('HLEN', KEYS[2]),
  redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1),
  redis.call('XLEN', KEYS[3]),
  groups,
  redis.call('INFO', 'replication'),
  {
    string.match(memory, 'used_memory:(%d+)') or '0',
    string.match(memory, 'mem_not_counted_for_evict:(%d+)') or '0',
    string.match(memory, 'maxmemory:(%d+)') or '0',
  },
}
