--[[
  Moves one stream entry to the sale's dead-letter stream with the reason, and acknowledges it, in one
  step: the entry is never both lost from the stream and missing from the dead letters. In the same step
  the reservation's rejection is recorded under its id, so a status lookup finds it with one HGET instead
  of reading the dead-letter stream (which operators and the audit still read, unchanged).

  Input:
    KEYS[1] sale stream
    KEYS[2] sale dead-letter stream
    KEYS[3] sale rejected hash (reservation id -> {"u","q","reason"} as JSON)

    ARGV[1] consumer group name
    ARGV[2] entry id
    ARGV[3] reason (a short code)
    ARGV[4] deliveries so far
    ARGV[5..] the entry's fields, as field, value pairs

  Output:
    the dead-letter entry id
    a WRONGTYPE error, with nothing written, when a key holds another type than it should

  A script that fails leaves its earlier writes in place, so the types are checked before the first
  write: otherwise a rejected hash of another type would leave the entry dead-lettered and acknowledged
  but its rejection unrecorded. Dead letters are rare; the three TYPE calls cost nothing that matters.
]]
local expected = { 'stream', 'stream', 'hash' }
for i = 1, 3 do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  if kind ~= 'none' and kind ~= expected[i] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a ' .. expected[i])
  end
end
local fields = { 'id', ARGV[2], 'reason', ARGV[3], 'deliveries', ARGV[4] }
local entry = {}
for i = 5, #ARGV do
  fields[#fields + 1] = ARGV[i]
  if (i - 5) % 2 == 0 and ARGV[i + 1] ~= nil and entry[ARGV[i]] == nil then entry[ARGV[i]] = ARGV[i + 1] end
end
local id = redis.call('XADD', KEYS[2], '*', unpack(fields))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
-- An entry without a reservation id (a malformed one) has nothing a buyer could look up.
if entry['r'] ~= nil and entry['r'] ~= '' then
  redis.call('HSET', KEYS[3], entry['r'], cjson.encode({ u = entry['u'] or '', q = entry['q'] or '', reason = ARGV[3] }))
end
return id
