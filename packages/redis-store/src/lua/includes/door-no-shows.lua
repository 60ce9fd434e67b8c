--[[
  The door's measure of no-shows and the stock bound that admits ahead of it (admit-queue-6.lua says
  why; includes/door.lua names the door hash's fields it keeps).
]]

-- Weight a counted turn keeps per later turn counted: the measure is of about the last 100 turns.
local NO_SHOW_DECAY = 0.99
-- The most the door admits ahead: a measured rate above it counts as this (ten turns per unit).
local NO_SHOW_RATE_MAX = 0.9
-- A turn whose buyer has not come this long after it was given is overdue (half the window, if shorter):
-- the longest Retry-After a waiting buyer near the front is told (5 s, while the stock holds the door),
-- and 2 s for the round trips. A buyer who honours Retry-After has come by then.
local OVERDUE_AFTER_MS = 7000

-- Counts the turns resolved since the last look into `measure` (the door hash's given, missed, shown,
-- w_shown, w_missed): `missed` windows lapsed now; the rest of the turns given a window and no longer in
-- one (`awaiting_show_up` of them are) are buyers who came. Answers the no-show rate of recent turns,
-- with the `overdue` turns (nobody came within OVERDUE_AFTER_MS) counted as no-shows until they are
-- resolved, so a farm's turns weigh after 7 s rather than a whole window; shrunk towards 0 by one buyer who came (a first no-show alone does not
-- send the door ten turns ahead).
local function measure_no_shows(measure, missed, awaiting_show_up, overdue)
  measure.missed = measure.missed + missed
  -- Never below what was counted: a show-up set a store lost does not take back buyers who came.
  local shown = math.max(measure.shown, measure.given - measure.missed - awaiting_show_up)
  local came = shown - measure.shown
  measure.shown = shown
  local decay = NO_SHOW_DECAY ^ (came + missed)
  measure.w_shown = measure.w_shown * decay + came
  measure.w_missed = measure.w_missed * decay + missed
  local absent = measure.w_missed + overdue
  return math.min(NO_SHOW_RATE_MAX, absent / (measure.w_shown + absent + 1))
end

-- Admissions the stock bound allows now (may be negative): a turn whose buyer came counts one buyer, a
-- turn in its show-up window 1 - no_show_rate of one (so, the rate capped, at most ten such turns a unit),
-- an overdue one none (it lapses with its window), against floor(remaining x factor).
local function admission_room(remaining, factor, unused, awaiting_show_up, overdue, no_show_rate)
  local came = unused - awaiting_show_up
  local fresh = awaiting_show_up - overdue
  -- The small epsilon keeps a whole quotient whole (0.3 / 0.1 is 2.9999999999999996 in doubles).
  return math.floor((math.floor(remaining * factor) - came) / (1 - no_show_rate) - fresh + 1e-9)
end
