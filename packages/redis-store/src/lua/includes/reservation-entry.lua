--[[
  A reservation on a sale's stream (TypeScript: reservation-stream.ts): fields r reservation id, u user
  id, q quantity, t time accepted (epoch ms, Redis's clock), g generation of the sale's Redis state that
  accepted it. Written in this order: the reader looks them up by position first. reserve.lua writes
  them, in its own text (a function here would cost its hot path a closure per call).
]]

-- The fields of an entry whose fields are list[from], list[from + 1], ... (field, value pairs; the first
-- of a name counts), as strings. A malformed entry may lack any of them (nil).
local function reservation_of(list, from)
  local fields = {}
  for i = from, #list - 1, 2 do
    if fields[list[i]] == nil then
      fields[list[i]] = list[i + 1]
    end
  end
  return { id = fields['r'], user_id = fields['u'], quantity = fields['q'], reserved_at = fields['t'], generation = fields['g'] }
end
