--[[
  The sale meta hash (TypeScript: sale-meta.ts), the one list of its fields: name, stock, remaining,
  limit (per user), starts and ends (epoch ms on Redis's clock), paused ('1' or '0': the reconciler's
  pause), gen (the generation of this Redis state), op_paused ('1' or '0': the operator's pause), ctl (the
  version of the operator's controls applied, apply-controls-1.lua), the door's terms adm and q_*
  (includes/door-terms.lua), the rebuy rule rb_max and rb_cool (includes/buyer-history.lua), and what
  return-units-4.lua gave back in this generation: ret_units (units) and ret_res (reservations whose
  buyer record it removed). Both only grow within a generation (a rebuild writes a new record without
  them), so stock - remaining + ret_units and the buyers + ret_res stay what this state has accepted,
  which only grows: the reconciler's checkpoints rely on it.
  Every script writes and reads its fields through these functions.
]]

-- Now on Redis's clock, epoch ms: the clock every gateway agrees on (and TypeScript's redisNow).
local function redis_now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Writes the whole record: the sale's definition as publish-sale-2.lua and rebuild-sale-6.lua both take
-- it, ARGV[1..5] (name, stock, per-user limit, starts, ends), and its state { remaining, paused (boolean),
-- generation }.
local function write_sale_meta(key, definition, state)
  redis.call('HSET', key,
    'name', definition[1],
    'stock', definition[2],
    'limit', definition[3],
    'starts', definition[4],
    'ends', definition[5],
    'remaining', state.remaining,
    'paused', state.paused and '1' or '0',
    'gen', state.generation,
    'op_paused', state.operator_paused and '1' or '0',
    'ctl', state.controls_version or 0)
end

-- What a purchase is judged by, in one HMGET; nil when the sale is not in Redis.
local function read_sale_terms(key)
  local meta = redis.call('HMGET', key, 'starts', 'ends', 'paused', 'limit', 'remaining', 'gen', 'op_paused', 'adm', 'rb_max', 'rb_cool')
  if not meta[1] then
    return nil
  end
  return {
    starts = tonumber(meta[1]),
    ends = tonumber(meta[2]),
    -- Either pause refuses: the reconciler's (paused) and the operator's (op_paused) are kept apart so
    -- that neither lifts the other.
    paused = meta[3] == '1' or meta[7] == '1',
    limit = tonumber(meta[4]),
    remaining = tonumber(meta[5]),
    generation = meta[6] or '',
    -- Bought through the door (includes/door-terms.lua).
    queued = meta[8] == '1',
    -- The rebuy rule (includes/buyer-history.lua); nil for a sale without one.
    rebuy = meta[9] and { max = tonumber(meta[9]), cooldown_ms = tonumber(meta[10]) * 1000 } or nil,
  }
end

-- Takes `quantity` units; returns what remains.
local function take_sale_stock(key, quantity)
  return redis.call('HINCRBY', key, 'remaining', -quantity)
end

-- Gives `quantity` units back (an order that was cancelled or expired) and counts them; returns what
-- remains. `buyer_removed` says whether the buyer's record went with them.
local function return_sale_stock(key, quantity, buyer_removed)
  redis.call('HINCRBY', key, 'ret_units', quantity)
  if buyer_removed then
    redis.call('HINCRBY', key, 'ret_res', 1)
  end
  return redis.call('HINCRBY', key, 'remaining', quantity)
end

local function set_sale_paused(key, paused)
  redis.call('HSET', key, 'paused', paused and '1' or '0')
end

-- The generation of the sale's Redis state, or false when the sale is not in Redis.
local function sale_generation(key)
  return redis.call('HGET', key, 'gen')
end

-- The operator's controls (apply-controls-1.lua): the fields they own, written only over an older
-- version (`ctl`). Stock changes move remaining by as much, so what this state has accepted (stock -
-- remaining) stays what it was: the reconciler's checkpoints and the audit rely on it. Returns 1 applied,
-- 0 this version or a newer one was applied already, -2 refused (the stock would shrink).
local function apply_sale_controls(key, controls)
  local current = redis.call('HMGET', key, 'ctl', 'stock')
  if (tonumber(current[1]) or 0) >= controls.version then
    return 0
  end
  local added = controls.stock - tonumber(current[2])
  if added < 0 then
    return -2
  end
  if added > 0 then
    redis.call('HINCRBY', key, 'remaining', added)
  end
  redis.call('HSET', key,
    'stock', controls.stock,
    'ends', controls.ends,
    'op_paused', controls.operator_paused and '1' or '0',
    'ctl', controls.version)
  return 1
end
