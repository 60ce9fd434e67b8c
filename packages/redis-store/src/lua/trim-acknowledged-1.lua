--[[
  Removes from a sale's stream the entries the order writers are done with, so that a stream holds
  what is still in flight (plus what the reconciler needs) rather than every reservation ever accepted.
  An entry is removed only if it was delivered to the group and acknowledged (it is then an order in
  MySQL, or a dead letter with its own copy), and only if it is older than `keep from`. Entries pending
  on a consumer, entries not yet delivered, and `keep from` itself are always kept. Exact trimming
  (no ~): a pass removes about one watch interval of entries.

  The age bound gives way to the count bound: a stream holding more than `max entries` keeps no entry
  for its age, so at a high accept rate it does not hold every entry of the whole retention time. After
  a pass the stream holds at most max(`max entries`, the entries from the oldest of `keep from`, the
  oldest pending entry and the first undelivered one, to its end): in flight + entries since the kept
  checkpoint entry + 1, and more only by the acknowledged entries that came after an entry still
  pending (a stream is only ever trimmed of a prefix).

  Input:
    KEYS[1] sale stream (only the order writers' group and entry ids are read, no entry's fields)

    ARGV[1] consumer group name
    ARGV[2] keep this entry and every later one ('' for no such bound)
    ARGV[3] keep every entry added at or after this time, epoch ms ('' for no such bound)
    ARGV[4] keep entries for their age only while the stream holds at most this many ('' for no such bound)

  Output:
    the number of entries removed (0 when the stream or the group is missing)
]]
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq), ms
end

local function older(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end

local delivered = nil
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local name, last = nil, nil
  for i = 1, #group, 2 do
    if group[i] == 'name' then
      name = group[i + 1]
    elseif group[i] == 'last-delivered-id' then
      last = group[i + 1]
    end
  end
  if name == ARGV[1] then
    delivered = last
  end
end
if not delivered then
  return 0
end

-- Everything after the last delivered entry is undelivered: the first id that may not go is just past it.
local _, seq, ms = parse(delivered)
local limit = ms .. '-' .. string.format('%d', seq + 1)

local pending = redis.call('XPENDING', KEYS[1], ARGV[1])
if pending[1] > 0 and older(pending[2], limit) then
  limit = pending[2]
end
if ARGV[2] ~= '' and older(ARGV[2], limit) then
  limit = ARGV[2]
end
local aged = ARGV[4] == '' or redis.call('XLEN', KEYS[1]) <= tonumber(ARGV[4])
if aged and ARGV[3] ~= '' and older(ARGV[3] .. '-0', limit) then
  limit = ARGV[3] .. '-0'
end
return redis.call('XTRIM', KEYS[1], 'MINID', limit)
