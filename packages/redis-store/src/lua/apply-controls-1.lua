--[[
  Writes an operator's controls of a sale (pause, resume, close, add stock) into its Redis state, as MySQL
  recorded them under the sale row lock: MySQL first, then this script, keyed by the sale.

  It writes the whole of what the controls own, at a version, not a change: applied over an older
  version only, so it is idempotent (a retry, or the reconciler converging a state after a crash between
  the two writes, applies it again harmlessly) and two controls whose scripts reach Redis in the other
  order than they committed in MySQL still leave MySQL's last word.

  Input:
    KEYS[1] sale meta hash (record: sale meta, includes/sale-meta.lua)

    ARGV[1] controls version (MySQL's sales.controls_version)
    ARGV[2] stock (total units; never lower than the stock Redis holds)
    ARGV[3] ends at (epoch ms on Redis's clock)
    ARGV[4] operator paused: '1' or '0'

  Output:
    1  applied
    0  this version or a newer one was applied already; nothing changed
    -1 the sale is not in Redis (lost with Redis's data, or never published); nothing written: the
       rebuild that restores it writes MySQL's controls
    -2 refused: the stock would be lower than Redis's; nothing changed
]]
--@include "includes/sale-meta.lua"

if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
return apply_sale_controls(KEYS[1], {
  version = tonumber(ARGV[1]),
  stock = tonumber(ARGV[2]),
  ends = ARGV[3],
  operator_paused = ARGV[4] == '1',
})
