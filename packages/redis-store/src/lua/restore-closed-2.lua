--[[
  Writes a sale's rebuy rule and its buyers' closed orders as MySQL holds them, after a rebuild and
  before the sale resumes (the reconciler, packages/sales buyer-history.ts), one page of buyers a call.

  Merged, never replaced: a count only grows, and Redis may already hold a close that MySQL committed
  after the caller read it (its return ran since), so each buyer keeps the record with the larger count,
  Redis's own on a tie (a repeat of the restore changes nothing: MySQL's time, put on Redis's clock, moves
  by a millisecond from one call to the next). MySQL closes an order before Redis counts it, so MySQL's
  count is never behind but by such a race, and a Redis that lost its data gets every count back. The
  rule and, when the closed hash holds any record, the meta's `closed` go into the packed terms.

  Input:
    KEYS[1] sale meta hash   (record: sale meta, includes/sale-meta.lua)
    KEYS[2] sale closed hash (includes/buyer-history.lua)

    ARGV[1] most orders per buyer
    ARGV[2] cooldown seconds
    ARGV[3 + 3k], ARGV[4 + 3k], ARGV[5 + 3k]: user id, closed orders, last closed at (epoch ms) (k = 0..)

  Output:
    the number of buyers given, or -1 when the sale is not in Redis (nothing written)
]]
--@include "includes/sale-meta.lua"
--@include "includes/buyer-history.lua"

if not sale_generation(KEYS[1]) then
  return -1
end
write_rebuy_rule(KEYS[1], ARGV, 1)
local written = 0
for i = 3, #ARGV - 2, 3 do
  local user_id, closed, last = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local record = redis.call('HGET', KEYS[2], user_id)
  local held = record and tonumber(string.match(record, '^(%d+)|')) or -1
  if closed > held then
    redis.call('HSET', KEYS[2], user_id, closed .. '|' .. last)
  end
  written = written + 1
end
-- Records restored now, or counted before the rebuild (the closed hash outlives the meta it rewrote):
-- purchases read them from now on.
if redis.call('EXISTS', KEYS[2]) == 1 then
  mark_sale_closed(KEYS[1])
end
write_sale_terms(KEYS[1])
return written
