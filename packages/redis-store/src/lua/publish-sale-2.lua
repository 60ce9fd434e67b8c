--[[
  Makes a sale live in Redis: its meta hash, and its stream with the order writers' consumer group.
  Idempotent, and never overwrites a sale that is already live: its remaining stock is the truth of
  every reservation taken since, and only the reconciler (after draining the stream) may rebuild it.

  Input:
    KEYS[1] sale meta hash (record: sale meta, includes/sale-meta.lua)
    KEYS[2] sale stream    (its consumer group, includes/ensure-group.lua)

    ARGV[1] name
    ARGV[2] stock (total units)
    ARGV[3] per-user limit
    ARGV[4] starts at (epoch ms)
    ARGV[5] ends at (epoch ms)
    ARGV[6] consumer group name
    ARGV[7] generation (a marker of this Redis state, so the reconciler can tell a rebuilt one)
    ARGV[8] not after (epoch ms on Redis's clock), or '' for no limit
    ARGV[9..14] the door's terms: mode ('queue', or '' for an open sale), pre-queue seconds, admit rate
            per second, admission TTL seconds, no-show factor, door paused '1' / '0'
            (includes/door-terms.lua)
    ARGV[15..16] the rebuy rule: most orders per buyer, cooldown seconds; '' for none
            (includes/buyer-history.lua)
    ARGV[17..21] the door's guards: show-up seconds, challenge, its maxnumber, claim, queue cap
            (includes/door-terms.lua; unused for an open sale)

  Output:
    1  published now
    0  was already live; nothing changed
    -1 too late (TIME is past ARGV[8]); nothing changed

  The deadline fences off a publish that a hung Redis runs long after its sender gave up on it (the
  command sat in the socket): that create was answered as failed, and abandoned, and must not go live.
]]
--@include "includes/sale-meta.lua"
--@include "includes/ensure-group.lua"
--@include "includes/door-terms.lua"
--@include "includes/buyer-history.lua"

if ARGV[8] ~= '' and redis_now_ms() > tonumber(ARGV[8]) then
  return -1
end

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end

write_sale_meta(KEYS[1], ARGV, { remaining = ARGV[2], paused = false, generation = ARGV[7] })
write_door_terms(KEYS[1], ARGV, 9, 17)
write_rebuy_rule(KEYS[1], ARGV, 15)
write_sale_terms(KEYS[1])
return ensure_group(KEYS[2], ARGV[6]) or 1
