--[[
  Moves one stream entry to the sale's dead-letter stream with the reason, and acknowledges it, in one
  step: the entry is never both lost from the stream and missing from the dead letters. In the same step
  the reservation's rejection is recorded under its id, so a status lookup finds it with one HGET instead
  of reading the dead-letter stream, and the first time a reservation is set aside its units are added to
  its generation's count, so the audit reads one field instead of the whole dead-letter stream.

  Only units the reserve script took count: the entry's reservation must be the one the buyers hash
  records for its buyer (the reserve script writes both in one step). An entry the script never wrote (an
  OVER_USER_LIMIT entry added to the stream by hand, say) took nothing from remaining; counting it would
  show as drift at every audit afterwards. A rebuild rewrites the buyers hash, but it also starts a new
  generation, whose count this entry is not in.

  Input:
    KEYS[1] sale stream            (record: reservation entry, includes/reservation-entry.lua)
    KEYS[2] sale dead-letter stream (record: id, reason, deliveries, then the entry's fields; dead-letters.ts)
    KEYS[3] sale rejected hash      (records: reservation id -> {"u","q","reason"} as JSON, and
                                     'units:<generation>' -> units of that generation set aside; dead-letters.ts)
    KEYS[4] sale buyers hash        (record: buyer record, includes/buyer-record.lua; read only)

    ARGV[1] consumer group name
    ARGV[2] entry id
    ARGV[3] reason (a short code)
    ARGV[4] deliveries so far
    ARGV[5] the units the entry's reservation took if it is a well-formed reservation, '' if not: decided
            by decodeReservation (reservation-stream.ts), the one statement of what a well-formed entry is
    ARGV[6..] the entry's fields, as field, value pairs

  Output:
    the dead-letter entry id
    a WRONGTYPE error, with nothing written, when a key holds another type than it should

  A script that fails leaves its earlier writes in place, so the types are checked before the first
  write: otherwise a rejected hash of another type would leave the entry dead-lettered and acknowledged
  but its rejection unrecorded. Dead letters are rare; the four TYPE calls cost nothing that matters.
]]
--@include "includes/reservation-entry.lua"
--@include "includes/buyer-record.lua"

-- The units a well-formed reservation (ARGV[5]) took from its generation's stock: nil unless the
-- buyer's record holds that reservation of those units, as readDeadLettered (dead-letters.ts) also asks.
local function units_taken(reservation, units)
  if units == '' or not records_reservation(redis.call('HGET', KEYS[4], reservation.user_id), reservation.id, units) then
    return nil
  end
  return units
end

local expected = { 'stream', 'stream', 'hash', 'hash' }
for i = 1, 4 do
  local kind = redis.call('TYPE', KEYS[i])['ok']
  if kind ~= 'none' and kind ~= expected[i] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a ' .. expected[i])
  end
end
local fields = { 'id', ARGV[2], 'reason', ARGV[3], 'deliveries', ARGV[4] }
for i = 6, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
local id = redis.call('XADD', KEYS[2], '*', unpack(fields))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
-- An entry without a reservation id (a malformed one) has nothing a buyer could look up; nor has one
-- whose id is a count's field name (written by hand: the gateway makes ids '<sale id>-<uuid>').
local reservation = reservation_of(ARGV, 6)
if reservation.id ~= nil and reservation.id ~= '' and string.sub(reservation.id, 1, 6) ~= 'units:' then
  -- A reservation set aside twice (two workers held its entry) counts once, as the audit counts it.
  local first = redis.call('HEXISTS', KEYS[3], reservation.id) == 0
  redis.call('HSET', KEYS[3], reservation.id, cjson.encode({ u = reservation.user_id or '', q = reservation.quantity or '', reason = ARGV[3] }))
  local units = first and units_taken(reservation, ARGV[5])
  if units then
    redis.call('HINCRBY', KEYS[3], 'units:' .. reservation.generation, units)
  end
end
return id
