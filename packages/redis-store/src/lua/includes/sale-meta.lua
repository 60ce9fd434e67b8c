--[[
  The sale meta hash (TypeScript: sale-meta.ts), the one list of its fields: name, stock, remaining,
  limit (per user), starts and ends (epoch ms on Redis's clock), paused ('1' or '0': the reconciler's
  pause), gen (the generation of this Redis state), op_paused ('1' or '0': the operator's pause), ctl (the
  version of the operator's controls applied, apply-controls-1.lua), the door's terms adm and q_*
  (includes/door-terms.lua), the rebuy rule rb_max and rb_cool (includes/buyer-history.lua), and what
  return-units-4.lua gave back in this generation: ret_units (units) and ret_res (reservations whose
  buyer record it removed). Both only grow within a generation (a rebuild writes a new record without
  them), so stock - remaining + ret_units and the buyers + ret_res stay what this state has accepted,
  which only grows: the reconciler's checkpoints rely on it. `closed` is '1' once the sale's closed hash
  may hold a buyer's record (return-units-4.lua counted a close, or restore-closed-2.lua found one).

  `terms` packs what a purchase is judged by into one value, so the reserve script reads two fields (it
  and `remaining`) rather than ten: a MessagePack array (cmsgpack, which Redis's Lua carries) of starts,
  ends, paused (true when either pause is on: paused or op_paused), limit, queued (adm: the sale is
  behind the door), rb_max and rb_cool (nil for a sale without a rebuy rule), closed (a boolean) and gen.
  MessagePack because unpacking gives numbers as numbers: reading them from digits (tonumber, strtod)
  cost the script more than the rest of its terms. It is derived: written only by the function below
  that makes it from the fields, which every script that writes one of them calls in the same step. The
  fields stay, for every other reader (TypeScript never reads `terms`). A meta written before `terms`
  existed has none, and is read field by field (reserve.lua).
  Every script writes and reads its fields through these functions, but the reserve script's HINCRBY of
  `remaining` (in its own text: a function here would cost its hot path a closure per call).
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
  -- `terms` and `remaining` first: the reserve script reads them, and a small hash (a listpack) is
  -- searched from its front. `terms` is made from the rest once everything is written: '' until then, not
  -- absent (an absent one is of a meta from before `terms`).
  redis.call('HSET', key,
    'terms', '',
    'remaining', state.remaining,
    'name', definition[1],
    'stock', definition[2],
    'limit', definition[3],
    'starts', definition[4],
    'ends', definition[5],
    'paused', state.paused and '1' or '0',
    'gen', state.generation,
    'op_paused', state.operator_paused and '1' or '0',
    'ctl', state.controls_version or 0)
end

-- `terms` as the meta's fields make it (see above), and its `closed`; nil when the sale is not in Redis. A
-- meta written before `terms` existed (none, not even the '' a whole record is written with) has no `closed`
-- either, and its closed hash may hold records: `closed` is then '1'.
local function sale_terms_of_fields(key)
  local f = redis.call('HMGET', key, 'starts', 'ends', 'paused', 'op_paused', 'limit', 'adm', 'rb_max', 'rb_cool', 'closed', 'gen', 'terms')
  if not f[1] then
    return nil
  end
  local closed = f[9] == '1' or not f[11]
  -- tonumber(false) is nil: a missing rule packs as nil.
  local terms = cmsgpack.pack(tonumber(f[1]), tonumber(f[2]), f[3] == '1' or f[4] == '1', tonumber(f[5]), f[6] == '1',
    tonumber(f[7]), tonumber(f[8]), closed, f[10] or '')
  return terms, closed and '1' or '0'
end

-- Rewrites `terms` (and `closed`, which a meta from before `terms` gets here) from the fields it packs: the
-- last write of every script that wrote one of them.
local function write_sale_terms(key)
  local terms, closed = sale_terms_of_fields(key)
  redis.call('HSET', key, 'terms', terms, 'closed', closed)
end

-- Marks the sale's closed hash as holding a record (a close counted, or restored), once: from then on the
-- reserve script reads a buyer's closed orders before accepting them.
local function mark_sale_closed(key)
  if redis.call('HGET', key, 'closed') ~= '1' then
    redis.call('HSET', key, 'closed', '1')
    write_sale_terms(key)
  end
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
  write_sale_terms(key)
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
  write_sale_terms(key)
  return 1
end
