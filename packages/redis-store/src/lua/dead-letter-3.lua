--[[
  Moves one stream entry to the sale's dead-letter stream with the reason, and acknowledges it, in one
  step: the entry is never both lost from the stream and missing from the dead letters. In the same step
  the reservation's rejection is recorded under its id, so a status lookup finds it with one HGET instead
  of reading the dead-letter stream (which operators and the audit still read, unchanged).

  Input:
    KEYS[1] sale stream            (record: reservation entry, includes/reservation-entry.lua)
    KEYS[2] sale dead-letter stream (record: id, reason, deliveries, then the entry's fields; dead-letters.ts)
    KEYS[3] sale rejected hash      (record: reservation id -> {"u","q","reason"} as JSON; dead-letters.ts)

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
--@include "includes/reservation-entry.lua"

local expected = { 'stream', 'stream', 'hash' }
for i = 1, 3 do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  if kind ~= 'none' and kind ~= expected[i] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a ' .. expected[i])
  end
end
local fields = { 'id', ARGV[2], 'reason', ARGV[3], 'deliveries', ARGV[4] }
for i = 5, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
local id = redis.call('XADD', KEYS[2], '*', unpack(fields))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
-- An entry without a reservation id (a malformed one) has nothing a buyer could look up.
local reservation = reservation_of(ARGV, 5)
if reservation.id ~= nil and reservation.id ~= '' then
  redis.call('HSET', KEYS[3], reservation.id, cjson.encode({ u = reservation.user_id or '', q = reservation.quantity or '', reason = ARGV[3] }))
end
return id
