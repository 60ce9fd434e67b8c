--[[
  A buyer's record in the sale's buyers hash (TypeScript: buyer-record.ts): user id ->
  "<reservationId>|<quantity>|<reservedAt>", the reservation the buyer holds and when Redis accepted it
  (epoch ms, Redis's clock). The time is what a faithful order needs besides the id and quantity (its
  payBy): with it, an order MySQL lost (a restore, a replica promoted behind) is written again from this
  record once the stream entry is trimmed. Records written before it carried the time have two fields.
  reserve.lua writes it, in its own text (a function here would cost its hot path a closure per call).
]]

-- Whether a buyer's record holds this reservation of this quantity (with or without its time).
local function records_reservation(record, reservation_id, quantity)
  if not record then
    return false
  end
  local held = reservation_id .. '|' .. quantity
  return record == held or string.sub(record, 1, #held + 1) == held .. '|'
end
