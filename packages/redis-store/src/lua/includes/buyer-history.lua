--[[
  The rebuy rule (TypeScript: buyer-history.ts, @flashsale/domain rebuy-rule.ts): what stops a buyer
  from holding a sale's units without paying by cancelling and buying again.

  Its terms are in the sale meta hash: rb_max (the most orders one buyer may open in the sale, live and
  closed together) and rb_cool (seconds: the wait after the buyer's second closed order, doubled after
  each later one; the first rebuy is immediate). A sale whose meta lacks them has no rule until its next
  rebuild writes them from MySQL.

  Its state is the sale's closed hash: user id -> "<closedOrders>|<lastClosedAtMs>" (Redis's clock), the
  buyer's orders of this sale that were cancelled or expired and whose units came back (return-units-4.lua
  counts each in the step that frees the buyer). A rebuild derives it from MySQL's closed orders
  (restore-closed-2.lua), so it survives the loss of Redis's data.
]]

-- Writes the rule's terms, args[from] (most orders per buyer) and args[from + 1] (cooldown seconds);
-- nothing when args[from] is '' (a sale defined without a rule).
local function write_rebuy_rule(key, args, from)
  if args[from] == nil or args[from] == '' then
    return
  end
  redis.call('HSET', key, 'rb_max', args[from], 'rb_cool', args[from + 1])
end

-- Counts one more closed order of the buyer, closed at `now`.
local function record_closed_order(key, user_id, now)
  local record = redis.call('HGET', key, user_id)
  local closed = 0
  if record then
    closed = tonumber(string.match(record, '^(%d+)|'))
  end
  redis.call('HSET', key, user_id, (closed + 1) .. '|' .. now)
end

-- Whether a buyer with no live order may open one now under the rule { max, cooldown_ms }: nil when
-- allowed; otherwise a reserve code and its value: -11 and the most orders (no order left to open), or
-- -10 and the milliseconds to wait (the cooldown runs).
local function rebuy_refusal(key, user_id, rule, now)
  local record = redis.call('HGET', key, user_id)
  if not record then
    return nil
  end
  local closed, last = string.match(record, '^(%d+)|(%d+)$')
  closed, last = tonumber(closed), tonumber(last)
  if closed >= rule.max then
    return -11, rule.max
  end
  if closed >= 2 and rule.cooldown_ms > 0 then
    -- The doubling stops at 2^20 (12 days of a 1 s cooldown): the wait stays an exact integer.
    local wait = last + rule.cooldown_ms * 2 ^ math.min(closed - 2, 20) - now
    if wait > 0 then
      return -10, math.ceil(wait)
    end
  end
  return nil
end
