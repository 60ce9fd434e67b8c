--[[
  The door's progress (TypeScript: door.ts), in keys of the sale's slot besides its meta:
    queue  sorted set: user id -> score. A buyer who joined before starts holds a random draw in
           [0, 2^52) made at join; a later one 2^52 + their arrival number. Ranks (ZRANK) are the order
           of admission: every pre-start joiner in draw order, then the rest in arrival order.
    turns  sorted set: user id -> admittedUntil (epoch ms, Redis's clock) of a running, unused turn;
           -admittedUntil once a purchase used it; 0 once it ran out unused (the abandonment recorded:
           only then is the buyer told `expired`). A new turn of a sale with a show-up window runs to
           the window's end until its buyer shows up (includes/door-admission.lua).
    show_up sorted set: user id -> the end of their full turn (admission + q_ttl), for each running
           turn whose buyer has not shown up yet: its member leaves when the buyer shows up (their turn
           then runs to that end), buys, or lets the window lapse (a no-show, counted then).
    door   hash: front (ranks given a turn so far), credit (admissions earned by the rate and not yet
           given), at (when credit was last earned), seq (arrivals after the start), drawn ('1' once
           anyone was admitted: no draw is made after that, whatever the clock says), abandoned (turns
           that ended unused), epoch (when this hash was first written, Redis's clock: a ticket signed in
           another epoch is of a door Redis lost), restoring_until (a door rebuilt after a loss admits
           nobody until then, so every waiting buyer can bring their ticket back first); the no-show
           measure of the turns given a show-up window (admit-queue-6.lua): given (such turns), missed
           (their windows that lapsed), shown (those whose buyer showed up or bought, as counted so
           far), w_shown and w_missed (the same of recent turns: weights that decay by NO_SHOW_DECAY
           per turn counted), no_show_rate (the measured share the door admits ahead of).
    paid   hash: reservation id -> units, and `units` -> their sum: what was paid for, so can never come
           back (record-paid-2.lua).
    pow    sorted set: solved challenge id (its signature) -> when the challenge expires: each solution
           joins once (join-queue-6.lua); expired ones are dropped at the next join with a solution.
]]

-- The sale's meta fields `adm`, `starts`, then those named, for a script of the door; or nil and the
-- refusal to return: { -1 } the sale is not in Redis, { -9 } it has no waiting room.
local function queued_sale_meta(meta_key, ...)
  local meta = redis.call('HMGET', meta_key, 'adm', 'starts', ...)
  if not meta[2] then
    return nil, { -1 }
  end
  if meta[1] ~= '1' then
    return nil, { -9 }
  end
  return meta
end

-- A member's queue score as a Lua number (ZSCORE answers a string), or nil.
local function queue_score(queue, user_id)
  local score = redis.call('ZSCORE', queue, user_id)
  if not score then
    return nil
  end
  return tonumber(score)
end

-- Marks the door's epoch once (the first write of its hash) and answers it.
local function door_epoch(door, now)
  redis.call('HSETNX', door, 'epoch', now)
  return tonumber(redis.call('HGET', door, 'epoch'))
end

-- The next arrival score after the start: 2^52 + the next arrival number (the `seq` of the door hash).
local function next_arrival(door)
  return 2 ^ 52 + redis.call('HINCRBY', door, 'seq', 1)
end
