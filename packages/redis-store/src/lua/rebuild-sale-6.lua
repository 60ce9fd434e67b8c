--[[
  Switches a sale's Redis state to the one a rebuild wrote from MySQL's record, paused. The reconciler
  calls it only once the sale's stream has drained (or was lost with Redis's data), so no reservation is
  in flight that MySQL does not know, and only after it has filled the next buyers hash (KEYS[6]) in
  chunks (sale-rebuild.ts): this script is the switch, O(1) whatever the number of buyers. Until it
  runs, the old state stands whole (paused, its old generation: a stock return of the new generation
  waits for it, return-units-4.lua); after it, the new one does. A rebuild that dies before it leaves
  the next hash behind, expiring, and the next attempt starts it anew.

  The old buyers and returned hashes go with UNLINK: Redis frees a big hash in a background thread, where
  DEL of 300,000 fields held it 122 ms. RENAME onto a key that no longer exists frees nothing; the next
  hash's expiry (its guard should the rebuild die) goes with PERSIST.

  Input:
    KEYS[1] sale meta hash   (record: sale meta, includes/sale-meta.lua)
    KEYS[2] sale buyers hash (replaced by KEYS[6])
    KEYS[3] sale stream      (its consumer group, includes/ensure-group.lua)
    KEYS[4] sale returned hash (emptied here: return-units-4.lua's record of the old generation)
    KEYS[5] sale door hash   (includes/door.lua)
    KEYS[6] next buyers hash (filled by the caller, buyer-record.ts; absent when the sale has no buyer)

    ARGV[1] name
    ARGV[2] stock
    ARGV[3] per-user limit
    ARGV[4] starts at (epoch ms)
    ARGV[5] ends at (epoch ms)
    ARGV[6] remaining (stock - units in live orders: the units of every order closed before the rebuild
            are counted back here, whether or not their return reached the old state)
    ARGV[7] generation (new; also recorded in MySQL under the sale row lock)
    ARGV[8] consumer group name
    ARGV[9] operator paused: '1' or '0' (MySQL's operator_paused_at; kept apart from this script's own pause)
    ARGV[10] controls version (MySQL's controls_version: an operator's control older than the rebuild
             does not apply over it; see apply-controls-1.lua)
    ARGV[11..16] the door's terms as MySQL holds them (includes/door-terms.lua); the door's progress
             (queue, turns, door hash) is in keys of its own and survives the rebuild
    ARGV[17] the grace of a door found lost (ms): a queued sale whose door hash is gone gets a new door
             (a new epoch) that admits nobody for this long, so every waiting buyer can come back to
             their place with their ticket (join-queue-6.lua) before the frontier moves; arrivals in the
             new door queue behind every arrival of the lost one (see below)
    ARGV[18..22] the door's guards as MySQL holds them (includes/door-terms.lua)

  Output:
    1   the door (if any) survived, or the sale has none
    2   a queued sale's door was lost and was begun again
]]
--@include "includes/sale-meta.lua"
--@include "includes/ensure-group.lua"
--@include "includes/door-terms.lua"
--@include "includes/door.lua"

redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[4])
if redis.call('EXISTS', KEYS[6]) == 1 then
  redis.call('RENAME', KEYS[6], KEYS[2])
  redis.call('PERSIST', KEYS[2])
end
write_sale_meta(KEYS[1], ARGV, {
  remaining = ARGV[6],
  paused = true,
  generation = ARGV[7],
  operator_paused = ARGV[9] == '1',
  controls_version = ARGV[10],
})
write_door_terms(KEYS[1], ARGV, 11, 18)
-- The rebuy rule and `closed` are not here: restore-closed-2.lua writes both (and the terms again) before
-- the sale resumes.
write_sale_terms(KEYS[1])
local door_lost = ARGV[11] == 'queue' and redis.call('EXISTS', KEYS[5]) == 0
if door_lost then
  local now = redis_now_ms()
  local starts = tonumber(ARGV[4])
  door_epoch(KEYS[5], now)
  -- Arrival numbers of the lost door were at most one per microsecond since the start (stated in
  -- docs/architecture.md): new arrivals are numbered past them.
  local seq = string.format('%.0f', math.max(0, now - starts) * 1000)
  redis.call('HSET', KEYS[5], 'restoring_until', now + tonumber(ARGV[17]), 'front', 0, 'at', now, 'seq', seq)
  if now >= starts then
    redis.call('HSET', KEYS[5], 'drawn', '1')
  end
end
-- A lost stream (and its group) is recreated empty; a surviving one keeps its group and history.
return ensure_group(KEYS[3], ARGV[8]) or (door_lost and 2 or 1)
