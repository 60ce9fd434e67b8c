--[[
  Reserves units of a sale for one buyer and enqueues the reservation, in one atomic step.

  Because the stock decrement, the buyer record and the stream entry happen in the same script, there is
  no moment where stock is taken but no order is on its way ("stock decremented, no order").
  The clock is Redis's own (TIME), not the gateway's: every gateway then agrees on when a sale starts and
  ends, whatever their clocks drift, and Redis 7 replicates the script's effects, not the script, so
  replicas stay identical.

  Input:
    KEYS[1] sale meta hash   (fields: starts, ends, paused, limit, remaining, gen, ...)
    KEYS[2] sale buyers hash (user id -> "<reservationId>|<quantity>")
    KEYS[3] sale stream      (reservations waiting to become orders)

    ARGV[1] user id
    ARGV[2] quantity (a positive integer; the gateway has validated its form)
    ARGV[3] reservation id (made by the gateway, unique)

  Output:
    { 1, remaining }                 reserved; remaining units after this reservation
    { -1, '' }                       sale not found (not published, or Redis lost it)
    { -2, '' }                       sale ended (now >= ends)
    { -3, '' }                       sale paused (reconciliation in progress)
    { -4, '' }                       sale not started (now < starts)
    { -5, limit }                    quantity above the sale's per-user limit
    { -6, '<reservationId>|<qty>' }  this buyer already holds a reservation
    { -7, '' }                       sold out (nothing left)
    { -8, remaining }                some left, fewer than asked

  Every refusal returns before the first write. A buyer who already holds a reservation is told so
  (-6, with its id) before any other refusal: the answer a retry needs (after a dropped connection, a
  timeout) whether the sale has since sold out, ended or been paused.
]]
local meta = redis.call('HMGET', KEYS[1], 'starts', 'ends', 'paused', 'limit', 'remaining', 'gen')
if not meta[1] then
  return { -1, '' }
end

local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing then
  return { -6, existing }
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

if now >= tonumber(meta[2]) then
  return { -2, '' }
end
if meta[3] == '1' then
  return { -3, '' }
end
if now < tonumber(meta[1]) then
  return { -4, '' }
end

local quantity = tonumber(ARGV[2])
local limit = tonumber(meta[4])
if quantity > limit then
  return { -5, limit }
end

local remaining = tonumber(meta[5])
if remaining <= 0 then
  return { -7, '' }
end
if remaining < quantity then
  return { -8, remaining }
end

-- The entry first: of the three writes it is the only one that can fail (the stream key holding another
-- type, out of memory at the first write), and a script that fails leaves its earlier writes in place.
-- Failing here, nothing is written; the two after it cannot fail (both keys were just read as hashes).
-- Field names are the stream format of reservation-stream.ts: r, u, q, t, g. The generation lets the
-- order writer refuse an entry of a Redis state that was rebuilt after it was read (see order-writer.ts).
redis.call('XADD', KEYS[3], '*', 'r', ARGV[3], 'u', ARGV[1], 'q', ARGV[2], 't', now, 'g', meta[6] or '')
remaining = redis.call('HINCRBY', KEYS[1], 'remaining', -quantity)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3] .. '|' .. ARGV[2])
return { 1, remaining }
