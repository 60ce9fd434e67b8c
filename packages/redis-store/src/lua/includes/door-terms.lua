--[[
  The door's terms in the sale meta hash (TypeScript: door.ts, admissionArgs): adm ('1': the sale is
  bought through its waiting room; absent or anything else: open), q_pre (seconds the queue opens before
  starts), q_rate (buyers admitted per second), q_ttl (seconds an admission lasts), q_factor (the
  no-show factor of the stock bound), q_paused ('1': the operator paused the door).
  Written at publish and at every rebuild from MySQL's record, so a rebuilt sale keeps its door; the
  door's progress (who was admitted) lives in keys of its own, which neither rewrites.
]]

-- Writes the terms given as args[from .. from + 5] (mode, pre-queue s, rate, ttl s, factor, paused);
-- nothing for an open sale (mode not 'queue'), whose meta stays exactly what it was before the door.
local function write_door_terms(key, args, from)
  if args[from] ~= 'queue' then
    return
  end
  redis.call('HSET', key,
    'adm', '1',
    'q_pre', args[from + 1],
    'q_rate', args[from + 2],
    'q_ttl', args[from + 3],
    'q_factor', args[from + 4],
    'q_paused', args[from + 5])
end
