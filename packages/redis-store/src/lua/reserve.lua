--[[
  Reserves units of a sale for one buyer and enqueues the reservation, in one atomic step.

  Because the stock decrement, the buyer record and the stream entry happen in the same script, there is
  no moment where stock is taken but no order is on its way ("stock decremented, no order").
  The clock is Redis's own (TIME), not the gateway's: every gateway then agrees on when a sale starts and
  ends, whatever their clocks drift, and Redis 7 replicates the script's effects, not the script, so
  replicas stay identical.

  Input: the keys a sale's terms need, 3, 4 or 6 (the caller passes their number first, EVALSHA's
  numkeys). An open sale reads and writes three keys; the rebuy rule's once an order of the sale was
  closed, a fourth; the door's, two more. Each key given costs the call (Redis makes a Lua string and a
  table slot of it), so a caller passes only those its sale has needed so far (reserve-purchase.ts): a
  call given too few answers { -12, n } before anything is read or written beyond the terms, and is made
  again with n keys.
    KEYS[1] sale meta hash   (record: sale meta, includes/sale-meta.lua)
    KEYS[2] sale buyers hash (record: buyer record, includes/buyer-record.lua)
    KEYS[3] sale stream      (record: reservation entry, includes/reservation-entry.lua)
    KEYS[4] sale closed hash (the buyers' closed orders, includes/buyer-history.lua; read only; needed
                              once `closed` is set and the sale has a rebuy rule)
    KEYS[5] sale turns       (the door's admissions, includes/door-admission.lua; needed, with the next,
                              for a sale behind the door)
    KEYS[6] sale show-up set (turns waiting for their buyer, includes/door.lua)

    ARGV[1] user id
    ARGV[2] quantity (a positive integer; the gateway has validated its form)
    ARGV[3] reservation id (made by the gateway, unique)

  Output: the remaining units (an integer, >= 0) when reserved (ReserveCode Reserved, @flashsale/domain);
  a refusal is a pair whose first element is its ReserveCode:
    { -1, '' }                       SaleNotFound (not published, or Redis lost it)
    { -2, '' }                       SaleEnded (now >= ends)
    { -3, '' }                       SalePaused (reconciliation in progress)
    { -4, '' }                       SaleNotStarted (now < starts)
    { -5, limit }                    AboveLimit: quantity above the sale's per-user limit
    { -6, '<reservationId>|<qty>' }  AlreadyPurchased: this buyer's record (buyer-record.ts parses it)
    { -7, '' }                       SoldOut (nothing left)
    { -8, remaining }                InsufficientStock: some left, fewer than asked
    { -9, '' }                       NotAdmitted: the sale is behind the door and this buyer holds no
                                     running turn (never admitted yet, expired, or used)
    { -10, waitMs }                  RebuyCooldown: the buyer's closed orders make them wait this long
                                     before opening another (the sale's rebuy rule)
    { -11, maxOrders }               OrderLimitReached: the buyer has opened as many orders in this sale
                                     as its rebuy rule allows
    { -12, n }                       NeedsKeys: this sale's terms need n keys, fewer were given (the
                                     caller's to handle: never a buyer's answer)

  Every refusal returns before the first write but one: a buyer whose turn is in its show-up window and
  who is refused after the turn check (-5, -7, -8, -10, -11) has shown up, and their turn runs to its
  full end (includes/door-admission.lua, show_up). A buyer who already holds a reservation is told so
  (-6, with its id) before any other refusal: the answer a retry needs (after a dropped connection, a
  timeout) whether the sale has since sold out, ended or been paused.
]]

-- Every `local function` in a script makes a closure each time the script runs past it, called or not
-- (Lua 5.1 keeps none from one call to the next). So the accepted path's own clock read and writes are
-- written out here rather than called (each record's include says so), and each include whose functions
-- only some sales need is inlined in the branch that needs them (the loader reads `--@include` at the
-- start of a line, in a block too): an open sale's call makes no closure at all. What each part costs:
-- docs/performance.md.

-- The sale's terms packed in one field (includes/sale-meta.lua), or, for a meta written before they were,
-- made from its fields.
local terms = redis.call('HGET', KEYS[1], 'terms')
if not terms then
--@include "includes/sale-meta.lua"
  terms = sale_terms_of_fields(KEYS[1])
  if not terms then
    return { -1, '' }
  end
end
local starts, ends, paused, limit, queued, rebuy_max, rebuy_cool, closed, generation = cmsgpack.unpack(terms)
local needed = (queued and 6) or (closed and rebuy_max and 4) or 3
if #KEYS < needed then
  return { -12, needed }
end

local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing then
  return { -6, existing }
end

-- Redis's clock, epoch ms, as includes/sale-meta.lua reads it for every other script, but made in digits
-- first: the entry and the buyer's record write it so, and a number given to redis.call or joined to a
-- string is printed (printf), several times what joining strings costs. TIME's microseconds come without
-- leading zeros. Digits are made a number with `+ 0` here and below: Lua's tonumber parses them twice.
local time = redis.call('TIME')
local at = time[1] .. string.sub('00000' .. time[2], -6, -4)
local now = at + 0

if now >= ends then
  return { -2, '' }
end
if paused then
  return { -3, '' }
end
if now < starts then
  return { -4, '' }
end

-- The door: one branch on a field read with the terms; an open sale pays nothing more. Its two later
-- steps are kept for after the checks: a closure each, made for a sale behind the door only.
local turn, door_show_up, door_use_turn
if queued then
--@include "includes/door-admission.lua"
  turn = running_turn(KEYS[5], ARGV[1], now)
  if not turn then
    return { -9, '' }
  end
  door_show_up, door_use_turn = show_up, use_turn
end

-- A refusal from here on is of a buyer who came for their turn (a purchase attempt is showing up).
local quantity = ARGV[2] + 0
local remaining = redis.call('HGET', KEYS[1], 'remaining') + 0
local code, value
if quantity > limit then
  code, value = -5, limit
elseif remaining <= 0 then
  code, value = -7, ''
elseif remaining < quantity then
  code, value = -8, remaining
elseif rebuy_max and closed then
  -- The rebuy rule, last: one HGET, only for a buyer about to be accepted (no live record, units left) of
  -- a sale where an order was closed, so refusals cost nothing more, nor does a sale nobody cancelled in.
--@include "includes/buyer-history.lua"
  code, value = rebuy_refusal(KEYS[4], ARGV[1], { max = rebuy_max, cooldown_ms = rebuy_cool * 1000 }, now)
end
if code then
  if turn then
    door_show_up(KEYS[5], KEYS[6], ARGV[1], turn)
  end
  return { code, value }
end

-- The entry first: of the three writes it is the only one that can fail (the stream key holding another
-- type, out of memory at the first write), and a script that fails leaves its earlier writes in place.
-- Failing here, nothing is written; the two after it cannot fail (both keys were just read as hashes).
-- The generation lets the order writer refuse an entry of a Redis state that was rebuilt after it was
-- read (see order-writer.ts). The entry's fields: includes/reservation-entry.lua; the buyer's record:
-- includes/buyer-record.lua.
redis.call('XADD', KEYS[3], '*', 'r', ARGV[3], 'u', ARGV[1], 'q', ARGV[2], 't', at, 'g', generation)
remaining = redis.call('HINCRBY', KEYS[1], 'remaining', '-' .. ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3] .. '|' .. ARGV[2] .. '|' .. at)
if turn then
  door_use_turn(KEYS[5], KEYS[6], ARGV[1], turn)
end
return remaining
