--[[
  The door's terms in the sale meta hash (TypeScript: sale-meta.ts, doorTermsArgs): adm ('1': the sale is
  bought through its waiting room; absent or anything else: open), q_pre (seconds the queue opens before
  starts), q_rate (buyers admitted per second), q_ttl (seconds an admission lasts), q_factor (the
  no-show factor of the stock bound), q_paused ('1': the operator paused the door); against account
  farms: q_show (seconds a new turn lasts until its buyer shows up), q_pow ('off', 'pow', 'auto': the
  challenge at join, checked by the gateway), q_pow_max (its difficulty, ALTCHA's maxnumber), q_claim (the
  buyer-token claim a joiner must hold true, checked by the gateway; '' none), q_max (the most buyers the
  queue holds; '' no cap). A meta without the guards' fields has none of them: no show-up window (the
  full turn at once), no challenge, no claim, no cap.
  Written at publish and at every rebuild from MySQL's record, so a rebuilt sale keeps its door; the
  door's progress (who was admitted) lives in keys of its own, which neither rewrites.
]]

-- Writes the terms given as args[from .. from + 5] (mode, pre-queue s, rate, ttl s, factor, paused) and
-- the guards as args[guards .. guards + 4] (show-up s, challenge, its maxnumber, claim, queue cap);
-- nothing for an open sale (mode not 'queue'), whose meta holds no field of the door's.
local function write_door_terms(key, args, from, guards)
  if args[from] ~= 'queue' then
    return
  end
  redis.call('HSET', key,
    'adm', '1',
    'q_pre', args[from + 1],
    'q_rate', args[from + 2],
    'q_ttl', args[from + 3],
    'q_factor', args[from + 4],
    'q_paused', args[from + 5],
    'q_show', args[guards],
    'q_pow', args[guards + 1],
    'q_pow_max', args[guards + 2],
    'q_claim', args[guards + 3],
    'q_max', args[guards + 4])
end
