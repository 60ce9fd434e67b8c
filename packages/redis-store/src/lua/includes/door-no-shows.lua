--[[
  The door's measure of no-shows and the stock bound that admits ahead of it (admit-queue-6.lua says
  why; includes/door.lua names the door hash's fields it keeps).
]]

-- Weight a counted turn keeps per later turn counted: the measure is of about the last 100 turns.
local NO_SHOW_DECAY = 0.99
-- The most the door admits ahead: a measured rate above it counts as this (ten turns per unit).
local NO_SHOW_RATE_MAX = 0.9

-- Counts the turns resolved since the last look into `measure` (the door hash's given, missed, shown,
-- w_shown, w_missed): `missed` windows lapsed now; the rest of the turns given a window and no longer in
-- one (`awaiting_show_up` of them are) are buyers who came. Answers the no-show rate of recent turns,
-- with the `overdue` turns (half their window gone, nobody came: a buyer who honours Retry-After hears of
-- a turn within 5 s) counted as no-shows until they are resolved, so a farm's turns weigh after half a
-- window rather than a whole one; shrunk towards 0 by one buyer who came (a first no-show alone does not
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
-- turn in its show-up window 1 - no_show_rate of one, against floor(remaining x factor).
local function admission_room(remaining, factor, unused, awaiting_show_up, no_show_rate)
  local came = unused - awaiting_show_up
  local bound = math.floor(remaining * factor)
  -- The small epsilon keeps a whole quotient whole (0.3 / 0.1 is 2.9999999999999996 in doubles).
  return math.floor((bound - came) / (1 - no_show_rate) - awaiting_show_up + 1e-9)
end
